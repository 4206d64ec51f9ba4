// Asking the kernel to fetch an image ahead of its reader: what is asked for, and when.
#include "content/read_ahead.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kWindow = hal::kReadAheadWindow;
constexpr uint64_t kAsk = hal::kReadAheadWindow + hal::kReadAheadStep;

TEST(ReadAhead, GivenAReaderAtTheStart_WhenAsked_ThenTheWindowAndAStepAreRequested) {
    auto r = hal::nextReadAhead(0, 0, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 0u);
    EXPECT_EQ(r->length, kAsk);
}

TEST(ReadAhead, GivenTheWindowAheadAlreadyRequested_WhenAsked_ThenNothingMore) {
    EXPECT_FALSE(hal::nextReadAhead(kMiB, kAsk, 1024 * kMiB).has_value());
    EXPECT_FALSE(hal::nextReadAhead(kAsk - kWindow, kAsk, 1024 * kMiB).has_value());
}

TEST(ReadAhead, GivenTheReaderCloserThanTheWindow_WhenAsked_ThenTheRequestGoesOnFromWhereItStopped) {
    uint64_t offset = kAsk - kWindow + 1;
    auto r = hal::nextReadAhead(offset, kAsk, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, kAsk);
    EXPECT_EQ(r->offset + r->length, offset + kAsk);
}

TEST(ReadAhead, GivenAFileEndingWithinTheWindow_WhenAsked_ThenUpToItsEndAndThenNothing) {
    auto r = hal::nextReadAhead(0, 0, 100);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 0u);
    EXPECT_EQ(r->length, 100u);
    EXPECT_FALSE(hal::nextReadAhead(50, 100, 100).has_value());
    EXPECT_FALSE(hal::nextReadAhead(100, 100, 100).has_value());
}

TEST(ReadAhead, GivenAReaderPastWhatItAskedFor_WhenAsked_ThenTheRequestStartsAtTheReader) {
    auto r = hal::nextReadAhead(500 * kMiB, 40 * kMiB, 1024 * kMiB);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, 500 * kMiB);
    EXPECT_EQ(r->length, kAsk);
}

TEST(ReadAhead, GivenOffsetsNearTheLargestValue_WhenAsked_ThenNoSumWraps) {
    uint64_t max = std::numeric_limits<uint64_t>::max();
    auto r = hal::nextReadAhead(max - kMiB, max - kMiB, max);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->offset, max - kMiB);
    EXPECT_EQ(r->length, kMiB);
}

// A reader walking through a file in reads of every size from 1 byte to 5 MiB, asking before
// each read: the requests are contiguous, never overlap or pass the end, cover the whole file,
// are each at least a step long but for the last, and keep the window ahead of the reader.
TEST(ReadAhead, GivenAReaderWalkingAFile_WhenItAsksBeforeEachRead_ThenTheRequestsTileTheFileAheadOfIt) {
    for (uint64_t size : {uint64_t{1}, 7 * kMiB, kAsk, kAsk + 1, 100 * kMiB + 123}) {
        for (uint64_t read : {uint64_t{1} << 12, kMiB, 5 * kMiB + 3}) {
            uint64_t asked = 0, requests = 0;
            for (uint64_t offset = 0; offset < size; offset += std::min(read, size - offset)) {
                if (auto r = hal::nextReadAhead(offset, asked, size)) {
                    ASSERT_EQ(r->offset, asked) << "size " << size << " read " << read;
                    ASSERT_GT(r->length, 0u);
                    ASSERT_LE(r->offset + r->length, size);
                    ASSERT_TRUE(r->length >= hal::kReadAheadStep || r->offset + r->length == size);
                    asked = r->offset + r->length;
                    ++requests;
                }
                ASSERT_GE(asked, std::min(size, offset + kWindow)) << "offset " << offset;
            }
            EXPECT_EQ(asked, size);
            EXPECT_LE(requests, 1 + size / hal::kReadAheadStep) << "size " << size << " read " << read;
        }
    }
}

} // namespace
