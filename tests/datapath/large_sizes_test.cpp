// Sizes past 32 bits (issue 22 item 5): the lanes, their checksums, zero runs, the size header
// and holes of image files, at 2^31 - 1, 2^31, 2^32, 2^32 + 4096 and 5 GiB, without allocating
// any of it. The lanes run over a staging area that no stage writes (the fakes below move no
// bytes), so a 5 GiB lane is 320 chunks of bookkeeping; image files are sparse.
#include "content/digest.h"
#include "content/file_holes.h"
#include "content/zero_runs.h"
#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"

#include "sparse_files.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using testing::HasSubstr;

constexpr uint64_t kGiB = 1ull << 30;
/// Every size where an int, an int32_t, a uint32_t or a 32-bit off_t would go wrong.
const std::vector<uint64_t> kSizes = {(1ull << 31) - 1, 1ull << 31, 1ull << 32, (1ull << 32) + 4096,
                                      5 * kGiB};

/// An anonymous mapping that is only ever read: its pages are the kernel's zero page, so
/// gigabytes of it cost page tables, not memory.
class ZeroMapping {
public:
    explicit ZeroMapping(uint64_t size) : size_(size) {
        void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        data_ = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    }
    ~ZeroMapping() {
        if (data_)
            munmap(data_, size_);
    }
    ZeroMapping(const ZeroMapping&) = delete;
    ZeroMapping& operator=(const ZeroMapping&) = delete;
    std::span<std::byte> bytes() const { return {data_, static_cast<size_t>(size_)}; }
    bool ok() const { return data_ != nullptr; }

private:
    uint64_t size_;
    std::byte* data_ = nullptr;
};

/// A device end that moves no bytes: it checks that the lane asks for the piece front to back
/// without gaps, and counts.
class InOrder final : public content::ContentSource, public content::ContentSink {
public:
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        return take(offset, out.size());
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        return take(offset, in.size());
    }
    uint64_t next() const { return next_; }

private:
    base::Result<void> take(uint64_t offset, size_t length) {
        if (offset != next_)
            return base::makeError(base::ErrorCode::Internal, "asked for %llu, expected %llu",
                                   static_cast<unsigned long long>(offset),
                                   static_cast<unsigned long long>(next_));
        next_ += length;
        return base::success();
    }
    uint64_t next_ = 0;
};

/// An image writer that counts what it is given and keeps nothing.
class CountingWriter final : public formats::ImageWriter {
public:
    explicit CountingWriter(uint64_t* total) : total_(total) {}
    base::Result<void> write(std::span<const std::byte> data) override {
        *total_ += data.size();
        return base::success();
    }
    base::Result<void> writeZeros(uint64_t length) override {
        *total_ += length;
        return base::success();
    }
    base::Result<void> close() override { return base::success(); }
    uint64_t written() const override { return *total_; }

private:
    uint64_t* total_;
};

/// An image reader of `size` bytes that leaves the bytes it is asked for as they are.
class SizedReader final : public formats::ImageReader {
public:
    explicit SizedReader(uint64_t size) : size_(size) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        if (out.size() > size_ - at_)
            return base::makeError(base::ErrorCode::Image, "image %s is truncated", name_.c_str());
        at_ += out.size();
        return base::success();
    }
    int64_t size() const override { return -1; }
    const std::string& name() const override { return name_; }

private:
    uint64_t size_;
    uint64_t at_ = 0;
    std::string name_ = "large.img";
};

/// A lane's options over `staging`, with or without the checksum; no holes, no progress lines.
datapath::LaneOptions laneOver(const ZeroMapping& staging, bool hash) {
    return {.gpu = "GPU 0x1000",
            .staging = staging.bytes(),
            .hash = hash,
            .holes = false,
            .progressSeconds = -1};
}

constexpr uint64_t kStaging = 64ull << 20;

/// Dumps one image of `sizes` pieces; returns the bytes its writer got.
uint64_t dumpPieces(const std::vector<uint64_t>& sizes, bool hash,
                    std::optional<content::ContentChecksum>* checksum = nullptr) {
    ZeroMapping staging(kStaging);
    EXPECT_TRUE(staging.ok());
    std::vector<InOrder> ends(sizes.size());
    uint64_t written = 0;
    datapath::DumpImage image;
    image.name = "large.img";
    image.create = [&]() -> base::Result<std::unique_ptr<formats::ImageWriter>> {
        return std::unique_ptr<formats::ImageWriter>(new CountingWriter(&written));
    };
    for (size_t i = 0; i < sizes.size(); ++i)
        image.pieces.push_back({&ends[i], nullptr, sizes[i], "BO " + std::to_string(i)});
    std::vector<datapath::DumpImage> images{std::move(image)};
    auto report = datapath::runDumpLane(images, laneOver(staging, hash));
    EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().describe());
    uint64_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(ends[i].next(), sizes[i]) << "piece " << i;
        total += sizes[i];
    }
    if (report.ok()) {
        EXPECT_EQ(report->bytes, total);
    }
    if (checksum)
        *checksum = images[0].checksum;
    return written;
}

/// Restores one image of `sizes` pieces from a reader of `fileBytes`.
base::Result<datapath::LaneReport> restorePieces(const std::vector<uint64_t>& sizes,
                                                 uint64_t fileBytes,
                                                 std::optional<content::ContentChecksum> expected,
                                                 std::vector<InOrder>& ends) {
    ZeroMapping staging(kStaging);
    EXPECT_TRUE(staging.ok());
    ends.assign(sizes.size(), InOrder());
    datapath::RestoreImage image;
    image.name = "large.img";
    image.open = [fileBytes]() -> base::Result<formats::FramedImage> {
        formats::FramedImage f;
        f.reader = std::make_unique<SizedReader>(fileBytes);
        f.announced = fileBytes;
        return f;
    };
    for (size_t i = 0; i < sizes.size(); ++i)
        image.pieces.push_back({nullptr, &ends[i], sizes[i], "BO " + std::to_string(i)});
    image.expected = expected;
    std::vector<datapath::RestoreImage> images{std::move(image)};
    return datapath::runRestoreLane(images, laneOver(staging, expected.has_value()));
}

TEST(LargeSizes, GivenOneBoOfEachSize_WhenDumped_ThenEveryByteReachesTheImageInOrder) {
    for (uint64_t size : kSizes)
        EXPECT_EQ(dumpPieces({size}, false), size) << size;
}

TEST(LargeSizes, GivenTwoBosOf2_5GiBInOneImage_WhenDumped_ThenTheImageHoldsAll5GiB) {
    EXPECT_EQ(dumpPieces({5 * kGiB / 2, 5 * kGiB / 2}, false), 5 * kGiB);
}

TEST(LargeSizes, GivenOneBoOfEachSize_WhenRestored_ThenEveryByteReachesTheBoInOrder) {
    for (uint64_t size : kSizes) {
        std::vector<InOrder> ends;
        auto report = restorePieces({size}, size, std::nullopt, ends);
        ASSERT_TRUE(report.ok()) << size << ": " << report.error().describe();
        EXPECT_EQ(report->bytes, size);
        EXPECT_EQ(ends[0].next(), size);
    }
}

TEST(LargeSizes, GivenTwoBosOf2_5GiB_WhenTheImageHoldsOneByteMore_ThenTheRestoreSaysItIsTooLong) {
    std::vector<InOrder> ends;
    auto report = restorePieces({5 * kGiB / 2, 5 * kGiB / 2}, 5 * kGiB + 1, std::nullopt, ends);
    ASSERT_FALSE(report.ok());
    EXPECT_THAT(report.error().describe(),
                HasSubstr("bytes follow the 5368709120 its contents should have"));
}

// One checksum over 2^32 + 4096 bytes: the dump's equals XXH3-64 of the same bytes at once, and
// the restore, hashing them again, finds it (any other value is refused: content_pipeline_test).
TEST(LargeSizes, GivenContentsPast4GiB_WhenDumpedAndRestored_ThenTheChecksumIsThatOfEveryByte) {
    constexpr uint64_t kSize = (1ull << 32) + 4096;
    std::optional<content::ContentChecksum> dumped;
    EXPECT_EQ(dumpPieces({kSize - 4096, 4096}, true, &dumped), kSize);
    ASSERT_TRUE(dumped.has_value());
    ZeroMapping all(kSize);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(dumped->value, content::xxh3Of(all.bytes()));

    std::vector<InOrder> ends;
    auto restored = restorePieces({kSize - 4096, 4096}, kSize, dumped, ends);
    EXPECT_TRUE(restored.ok()) << restored.error().describe();
}

// The holes of a chunk are whole 4 KiB blocks of its file: a chunk that starts at a file offset
// past 32 bits has its first block cut where that offset's block ends.
TEST(LargeSizes, GivenAChunkAtAFileOffsetPast32Bits_WhenFindingZeroRuns_ThenBlocksFollowTheFile) {
    for (uint64_t size : kSizes) {
        uint64_t fileOffset = formats::kImageHeaderBytes + size;
        uint64_t first = content::kHoleBlock - fileOffset % content::kHoleBlock;
        std::vector<std::byte> chunk(3 * content::kHoleBlock);
        chunk[0] = std::byte{1}; // the first block is data, the rest zeros
        std::vector<content::ByteRun> runs;
        content::ZeroRunFinder finder(fileOffset, runs);
        finder.feed(chunk);
        finder.finish();
        ASSERT_EQ(runs.size(), 1u) << size;
        EXPECT_EQ(runs[0], (content::ByteRun{first, chunk.size() - first})) << size;
    }
}

/// A directory image: the size header announcing 5 GiB + 4096, 5 GiB of zeros written as holes,
/// then 4096 bytes of data.
class LargeImageFile : public ::testing::Test {
protected:
    static constexpr uint64_t kContents = 5 * kGiB + 4096;
    void SetUp() override {
        if (!haltest::holesSupported(dir_.path()))
            GTEST_SKIP() << "the file system of " << dir_.path() << " keeps no holes";
        auto store = formats::openDirectoryStore(dir_.path());
        ASSERT_TRUE(store.ok());
        store_ = std::move(*store);
        auto writer = formats::createFramedImage(*store_, "large.img", kContents);
        ASSERT_TRUE(writer.ok()) << writer.error().describe();
        ASSERT_TRUE((*writer)->writeZeros(5 * kGiB).ok());
        std::vector<std::byte> data(4096, std::byte{0xab});
        ASSERT_TRUE((*writer)->write(data).ok());
        EXPECT_EQ((*writer)->written(), formats::kImageHeaderBytes + kContents);
        ASSERT_TRUE((*writer)->close().ok());
    }
    testsupport::TempDir dir_;
    std::unique_ptr<formats::ImageStore> store_;
};

TEST_F(LargeImageFile, GivenZerosPast4GiB_WhenWritten_ThenTheFileHasItsLengthAndHolesForThem) {
    struct stat st {};
    ASSERT_EQ(stat((dir_ / "large.img").c_str(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), formats::kImageHeaderBytes + kContents);
    EXPECT_LT(haltest::allocatedBytes(dir_ / "large.img"), 1 << 20);
}

TEST_F(LargeImageFile, GivenItsHeader_WhenOpened_ThenTheAnnouncedAndActualSizesAreExact) {
    auto image = formats::openFramedImage(*store_, "large.img");
    ASSERT_TRUE(image.ok()) << image.error().describe();
    EXPECT_EQ(image->announced, kContents);
    EXPECT_EQ(image->contents, static_cast<int64_t>(kContents));
    EXPECT_TRUE(formats::checkContentsSize(*image, kContents, "the BOs hold").ok());
    auto wrong = formats::checkContentsSize(*image, 6 * kGiB, "the BOs hold");
    ASSERT_FALSE(wrong.ok());
    EXPECT_THAT(wrong.error().describe(),
                HasSubstr("truncated: it holds 5368713216 bytes after its size header, the BOs "
                          "hold 6442450944"));
}

TEST_F(LargeImageFile,
       GivenHolesPast4GiB_WhenTheCursorAsks_ThenHolesAndDataAreWhereTheyWereWritten) {
    int fd = open((dir_ / "large.img").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint64_t size = formats::kImageHeaderBytes + kContents;
    content::HoleCursor cursor(fd, size);
    // The zeros of the header's block are written; every whole block after it is a hole, up to
    // the block the data is in.
    for (uint64_t at : kSizes) {
        content::FileSpan span = cursor.at(at);
        EXPECT_EQ(span.hole, at < 5 * kGiB) << at;
        EXPECT_EQ(span.end, at < 5 * kGiB ? 5 * kGiB : size) << at;
    }
    content::HoleCursor again(fd, size);
    auto data = content::dataRanges(again, {4096, size - 4096});
    ASSERT_EQ(data.size(), 1u);
    EXPECT_EQ(data[0].offset, 5 * kGiB);
    EXPECT_EQ(data[0].length, size - 5 * kGiB);
    std::byte last{};
    ASSERT_EQ(pread(fd, &last, 1, static_cast<off_t>(size - 1)), 1);
    EXPECT_EQ(last, std::byte{0xab});
    close(fd);
}

// The reader of a directory image goes through the 5 GiB of holes without reading them and
// reads the data after them from its exact offset.
TEST_F(LargeImageFile, GivenHolesPast4GiB_WhenReadFrontToBack_ThenZerosThenTheDataAtTheEnd) {
    auto image = formats::openFramedImage(*store_, "large.img");
    ASSERT_TRUE(image.ok()) << image.error().describe();
    std::vector<std::byte> chunk(4 << 20);
    for (uint64_t at = 0; at < 5 * kGiB; at += chunk.size()) {
        ASSERT_TRUE(image->reader->readExact(chunk).ok()) << at;
        ASSERT_TRUE(content::isAllZero(chunk)) << "bytes at " << at << " are not the zeros written";
    }
    std::vector<std::byte> data(4096);
    ASSERT_TRUE(image->reader->readExact(data).ok());
    EXPECT_EQ(data.front(), std::byte{0xab});
    EXPECT_EQ(data.back(), std::byte{0xab});
    auto end = image->reader->atEnd();
    ASSERT_TRUE(end.ok());
    EXPECT_TRUE(*end);
}

} // namespace
