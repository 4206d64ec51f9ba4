// Holes of image files: the cursor finds them, the read-ahead leaves them out, and a reader
// fills them with zeros without reading them.
#include "content/file_holes.h"
#include "formats/image_store.h"

#include "sparse_files.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

using content::FileRange;
using testsupport::TempDir;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSize = 8 * kMiB;

/// A file of kSize bytes, data only in `data` (byte i is i % 251 + 1 there), holes elsewhere.
class SparseFile : public ::testing::Test {
protected:
    void SetUp() override {
        if (!haltest::holesSupported(dir_.path()))
            GTEST_SKIP() << "the file system of " << dir_.path() << " keeps no holes";
        path_ = dir_ / "sparse.img";
        int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(ftruncate(fd, kSize), 0);
        for (const FileRange& r : data_) {
            std::vector<std::byte> bytes(r.length);
            for (uint64_t i = 0; i < r.length; ++i)
                bytes[i] = byteAt(r.offset + i);
            ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(r.offset)),
                      static_cast<ssize_t>(r.length));
        }
        fd_ = fd;
    }
    void TearDown() override {
        if (fd_ >= 0)
            close(fd_);
    }
    std::byte byteAt(uint64_t offset) const {
        for (const FileRange& r : data_)
            if (offset >= r.offset && offset < r.offset + r.length)
                return static_cast<std::byte>(offset % 251 + 1);
        return std::byte{0};
    }

    TempDir dir_;
    std::string path_;
    int fd_ = -1;
    const std::vector<FileRange> data_{{kMiB, 64 * 1024}, {6 * kMiB, 4096}, {kSize - 4096, 4096}};
};

/// Bytes this process has read from files so far (rchar of /proc/self/io).
uint64_t bytesReadSoFar() {
    std::ifstream io("/proc/self/io");
    std::string key;
    uint64_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:")
            return value;
    return 0;
}

TEST_F(SparseFile, GivenHoles_WhenTheCursorWalksTheFile_ThenItGivesEachSpanOnce) {
    content::HoleCursor cursor(fd_, kSize);
    std::vector<std::pair<bool, uint64_t>> spans;
    for (uint64_t at = 0; at < kSize;) {
        content::FileSpan span = cursor.at(at);
        ASSERT_GT(span.end, at);
        spans.push_back({span.hole, span.end});
        at = span.end;
    }
    EXPECT_EQ(spans, (std::vector<std::pair<bool, uint64_t>>{{true, kMiB},
                                                             {false, kMiB + 64 * 1024},
                                                             {true, 6 * kMiB},
                                                             {false, 6 * kMiB + 4096},
                                                             {true, kSize - 4096},
                                                             {false, kSize}}));
    EXPECT_FALSE(cursor.at(kMiB + 100).hole); // asked again, inside a span learnt before
}

TEST_F(SparseFile, GivenARangeOverHoles_WhenAskedForItsData_ThenOnlyTheDataRanges) {
    content::HoleCursor cursor(fd_, kSize);
    EXPECT_EQ(content::dataRanges(cursor, {kMiB / 2, 6 * kMiB}).size(), 2u);
    auto ranges = content::dataRanges(cursor, {kMiB + 4096, 6 * kMiB});
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].offset, kMiB + 4096);
    EXPECT_EQ(ranges[0].length, 60u * 1024);
    EXPECT_EQ(ranges[1].offset, 6 * kMiB);
    EXPECT_EQ(ranges[1].length, 4096u);
    EXPECT_TRUE(content::dataRanges(cursor, {2 * kMiB, kMiB}).empty());
}

TEST_F(SparseFile, GivenHoles_WhenReadThroughTheStore_ThenExactBytesAndTheHolesAreNotRead) {
    auto store = formats::openDirectoryStore(dir_.path());
    ASSERT_TRUE(store.ok());
    auto reader = (*store)->openRead("sparse.img");
    ASSERT_TRUE(reader.ok());
    std::vector<std::byte> got(kSize, std::byte{0xee});
    uint64_t before = bytesReadSoFar();
    for (uint64_t at = 0; at < kSize; at += 3 * kMiB / 2) // reads that straddle holes and data
        ASSERT_TRUE((*reader)
                        ->readExact(std::span(got).subspan(at, std::min(3 * kMiB / 2, kSize - at)))
                        .ok());
    uint64_t read = bytesReadSoFar() - before;

    for (uint64_t i = 0; i < kSize; ++i)
        ASSERT_EQ(got[i], byteAt(i)) << "byte " << i;
    // What was read: the data, and the few hundred bytes of /proc/self/io read in between.
    constexpr uint64_t kData = 64 * 1024 + 4096 + 4096;
    EXPECT_GE(read, kData);
    EXPECT_LT(read, kData + 4096) << "the reader read holes";
    auto end = (*reader)->atEnd();
    ASSERT_TRUE(end.ok());
    EXPECT_TRUE(*end);
}

TEST_F(SparseFile, GivenAReadPastTheEnd_ThenTruncatedNamingTheOffset) {
    auto store = formats::openDirectoryStore(dir_.path());
    ASSERT_TRUE(store.ok());
    auto reader = (*store)->openRead("sparse.img");
    ASSERT_TRUE(reader.ok());
    std::vector<std::byte> got(kSize + 10);
    auto r = (*reader)->readExact(got);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Image);
    EXPECT_NE(r.error().describe().find("wanted 10 more bytes at offset 8388608"),
              std::string::npos)
        << r.error().describe();
}

} // namespace
