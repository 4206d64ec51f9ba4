// The SDMA packets the backend encodes, dword by dword.
#include "kfd/sdma_packets.h"

#include <gtest/gtest.h>

using namespace kfd;

TEST(KfdSdmaPackets, GivenACopyOfFiveMiB_ThenItIsThreeLinearCopiesWithCountMinusOne) {
    std::vector<uint32_t> ib;
    uint64_t src = 0x0000000123456000ull, dst = 0x0000abcd00000000ull;
    appendSdmaCopy(ib, src, dst, 5ull << 20);
    ASSERT_EQ(ib.size(), 21u);
    const uint32_t counts[] = {0x1fffff, 0x1fffff, 0xfffff};
    for (int p = 0; p < 3; ++p) {
        const uint32_t* pk = &ib[static_cast<size_t>(p) * 7];
        uint64_t off = static_cast<uint64_t>(p) << 21;
        EXPECT_EQ(pk[0], 0x00000001u) << "op COPY (1), sub-op LINEAR (0)";
        EXPECT_EQ(pk[1], counts[p]);
        EXPECT_EQ(pk[2], 0u);
        EXPECT_EQ(pk[3], static_cast<uint32_t>(src + off));
        EXPECT_EQ(pk[4], static_cast<uint32_t>((src + off) >> 32));
        EXPECT_EQ(pk[5], static_cast<uint32_t>(dst + off));
        EXPECT_EQ(pk[6], static_cast<uint32_t>((dst + off) >> 32));
    }
    padSdmaIb(ib);
    ASSERT_EQ(ib.size(), 24u);
    EXPECT_EQ(ib[21], 0u);
    EXPECT_EQ(ib[23], 0u);
}

TEST(KfdSdmaPackets, GivenTheLargestPacket_ThenItsCountFitsThe22BitField) {
    std::vector<uint32_t> ib;
    appendSdmaCopy(ib, 0, 0x1000, kSdmaMaxCopyBytes);
    ASSERT_EQ(ib.size(), 7u);
    EXPECT_EQ(ib[1] & ~kSdmaCountMask, 0u);
    EXPECT_EQ(ib[1] + 1ull, kSdmaMaxCopyBytes);
}

TEST(KfdSdmaPackets, GivenOneByte_ThenCountIsZero) {
    std::vector<uint32_t> ib;
    appendSdmaCopy(ib, 1, 2, 1);
    EXPECT_EQ(ib[1], 0u);
    appendSdmaCopy(ib, 1, 2, 0);
    EXPECT_EQ(ib.size(), 7u) << "an empty copy emits nothing";
}

TEST(KfdSdmaPackets, GivenSizes_ThenIbDwordsCoverEveryPacketPadded) {
    EXPECT_EQ(sdmaIbDwordsFor(0), 8u);
    EXPECT_EQ(sdmaIbDwordsFor(1), 8u);
    EXPECT_EQ(sdmaIbDwordsFor(2ull << 20), 8u);
    EXPECT_EQ(sdmaIbDwordsFor((2ull << 20) + 1), 16u);
    EXPECT_EQ(sdmaIbDwordsFor(64ull << 20), 224u);
    EXPECT_EQ(sdmaHeader(kSdmaOpCopy, kSdmaSubOpCopyLinear), 1u);
}
