// Zero runs: whole blocks at their file offsets, partial blocks at a chunk's ends, blocks that
// span two fed pieces, and the first byte that is not zero.
#include "content/zero_runs.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using content::ByteRun;
using content::kHoleBlock;

/// The zero runs of `bytes` at `fileOffset`, fed in pieces of `piece` bytes.
std::vector<ByteRun> runsOf(const std::vector<std::byte>& bytes, uint64_t fileOffset,
                            size_t piece) {
    std::vector<ByteRun> runs{{1, 1}}; // the finder clears what was there
    content::ZeroRunFinder finder(fileOffset, runs);
    std::span<const std::byte> all(bytes);
    for (size_t at = 0; at < all.size(); at += piece)
        finder.feed(all.subspan(at, std::min(piece, all.size() - at)));
    finder.finish();
    return runs;
}

std::vector<std::byte> zeros(size_t n) {
    return std::vector<std::byte>(n);
}

TEST(IsAllZero, GivenOneByteNotZeroAnywhere_ThenFalse) {
    for (size_t at : {0u, 7u, 63u, 64u, 4095u, 4096u, 4099u}) {
        auto v = zeros(4100);
        v[at] = std::byte{1};
        EXPECT_FALSE(content::isAllZero(v)) << at;
    }
    EXPECT_TRUE(content::isAllZero(zeros(4100)));
    EXPECT_TRUE(content::isAllZero({}));
}

TEST(ZeroRunFinder, GivenAnAlignedChunkOfZeros_ThenOneRunOfAllOfIt) {
    EXPECT_EQ(runsOf(zeros(4 * kHoleBlock), 8 * kHoleBlock, 1000),
              (std::vector<ByteRun>{{0, 4 * kHoleBlock}}));
}

TEST(ZeroRunFinder, GivenOneByteNotZero_ThenItsBlockAtTheFileOffsetIsLeftOutAndNoOther) {
    // The chunk starts 8 bytes into its file (after the size header): blocks end at 4088 + n*4096.
    auto v = zeros(3 * kHoleBlock);
    v[5000] = std::byte{7}; // in the block 4088..8184 of the chunk
    EXPECT_EQ(runsOf(v, 8, 256), (std::vector<ByteRun>{{0, 4088}, {8184, 3 * kHoleBlock - 8184}}));
    EXPECT_EQ(runsOf(v, 8, v.size()), runsOf(v, 8, 256));
}

TEST(ZeroRunFinder, GivenZerosAtTheStartMiddleAndEnd_ThenThreeRunsOfWholeBlocksAndEdges) {
    auto v = zeros(10 * kHoleBlock);
    for (size_t i = 2 * kHoleBlock + 10; i < 3 * kHoleBlock; ++i)
        v[i] = std::byte{1};
    for (size_t i = 6 * kHoleBlock; i < 7 * kHoleBlock + 1; ++i)
        v[i] = std::byte{2};
    EXPECT_EQ(runsOf(v, 0, 3000), (std::vector<ByteRun>{{0, 2 * kHoleBlock},
                                                        {3 * kHoleBlock, 3 * kHoleBlock},
                                                        {8 * kHoleBlock, 2 * kHoleBlock}}));
}

TEST(ZeroRunFinder, GivenAChunkOfData_ThenNoRun) {
    std::vector<std::byte> v(3 * kHoleBlock + 5, std::byte{0x5a});
    EXPECT_TRUE(runsOf(v, 8, 4096).empty());
}

TEST(ZeroRunFinder, GivenAChunkSmallerThanABlock_ThenItIsOneRunOrNone) {
    EXPECT_EQ(runsOf(zeros(100), 4000, 100), (std::vector<ByteRun>{{0, 100}}));
    auto v = zeros(100);
    v[99] = std::byte{1};
    EXPECT_TRUE(runsOf(v, 8, 30).empty());
    // At file offset 4000 the chunk spans two blocks: the first holds only zeros.
    EXPECT_EQ(runsOf(v, 4000, 30), (std::vector<ByteRun>{{0, 96}}));
}

} // namespace
