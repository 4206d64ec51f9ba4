// Asking the kernel to fetch an image ahead of its reader: what is asked for, and when.
#include "content/read_ahead.h"

#include "page_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <cstdint>
#include <limits>

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kWindow = content::kReadAheadWindow;
constexpr uint64_t kAsk = content::kReadAheadWindow + content::kReadAheadStep;

TEST(ReadAhead, GivenAReaderAtTheStart_WhenAsked_ThenTheWindowAndAStepAreRequested) {
    auto r = content::nextReadAhead(0, 0, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 0u);
    EXPECT_EQ(r->length, kAsk);
}

TEST(ReadAhead, GivenTheWindowAheadAlreadyRequested_WhenAsked_ThenNothingMore) {
    EXPECT_FALSE(content::nextReadAhead(kMiB, kAsk, 1024 * kMiB).has_value());
    EXPECT_FALSE(content::nextReadAhead(kAsk - kWindow, kAsk, 1024 * kMiB).has_value());
}

TEST(ReadAhead,
     GivenTheReaderCloserThanTheWindow_WhenAsked_ThenTheRequestGoesOnFromWhereItStopped) {
    uint64_t offset = kAsk - kWindow + 1;
    auto r = content::nextReadAhead(offset, kAsk, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, kAsk);
    EXPECT_EQ(r->offset + r->length, offset + kAsk);
}

TEST(ReadAhead, GivenAFileEndingWithinTheWindow_WhenAsked_ThenUpToItsEndAndThenNothing) {
    auto r = content::nextReadAhead(0, 0, 100);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 0u);
    EXPECT_EQ(r->length, 100u);
    EXPECT_FALSE(content::nextReadAhead(50, 100, 100).has_value());
    EXPECT_FALSE(content::nextReadAhead(100, 100, 100).has_value());
}

TEST(ReadAhead, GivenAReaderPastWhatItAskedFor_WhenAsked_ThenTheRequestStartsAtTheReader) {
    auto r = content::nextReadAhead(500 * kMiB, 40 * kMiB, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 500 * kMiB);
    EXPECT_EQ(r->length, kAsk);
}

TEST(ReadAhead, GivenOffsetsNearTheLargestValue_WhenAsked_ThenNoSumWraps) {
    uint64_t max = std::numeric_limits<uint64_t>::max();
    auto r = content::nextReadAhead(max - kMiB, max - kMiB, max);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, max - kMiB);
    EXPECT_EQ(r->length, kMiB);
}

// A reader walking through a file in reads of every size from 1 byte to 5 MiB, asking before
// each read: the requests are contiguous, never overlap or pass the end, cover the whole file,
// are each at least a step long but for the last, and keep the window ahead of the reader.
TEST(ReadAhead,
     GivenAReaderWalkingAFile_WhenItAsksBeforeEachRead_ThenTheRequestsTileTheFileAheadOfIt) {
    for (uint64_t size : {uint64_t{1}, 7 * kMiB, kAsk, kAsk + 1, 100 * kMiB + 123}) {
        for (uint64_t read : {uint64_t{1} << 12, kMiB, 5 * kMiB + 3}) {
            uint64_t asked = 0, requests = 0;
            for (uint64_t offset = 0; offset < size; offset += std::min(read, size - offset)) {
                if (auto r = content::nextReadAhead(offset, asked, size)) {
                    ASSERT_EQ(r->offset, asked) << "size " << size << " read " << read;
                    ASSERT_GT(r->length, 0u);
                    ASSERT_LE(r->offset + r->length, size);
                    ASSERT_TRUE(r->length >= content::kReadAheadStep ||
                                r->offset + r->length == size);
                    asked = r->offset + r->length;
                    ++requests;
                }
                ASSERT_GE(asked, std::min(size, offset + kWindow)) << "offset " << offset;
            }
            EXPECT_EQ(asked, size);
            EXPECT_LE(requests, 1 + size / content::kReadAheadStep)
                << "size " << size << " read " << read;
        }
    }
}

// Linux fetches at most its own share of a range per POSIX_FADV_WILLNEED call (8 or 16 MiB on
// this project's machines, 128 KiB to 4 MiB on common disks) and drops the rest: a window fetched
// ahead is asked for in pieces, and every page of it reaches the page cache.
TEST(ReadAhead, GivenAFileNotInThePageCache_WhenAWindowIsFetchedAhead_ThenEveryPageOfItIsCached) {
    constexpr uint64_t kFile = 48 * kMiB, kFetch = 40 * kMiB;
    testsupport::TempDir dir = testsupport::pageCacheDir();
    std::string path = dir / "image.img";
    ASSERT_TRUE(testsupport::writeUncached(path, kFile));
    ASSERT_LT(testsupport::cachedBytes(path, kFile), kFile / 8)
        << dir.path() << " keeps its files' pages: nothing here can show what is fetched";
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    content::fetchAhead(fd, {0, kFetch});
    close(fd);
    // The pages are in the cache once their reads are started; allow for a slow disk.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (testsupport::cachedBytes(path, kFetch) < kFetch &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(testsupport::cachedBytes(path, kFetch), kFetch);
}

} // namespace
