// The SDMA packets the shared encoder emits, dword by dword.
#include "sdma/packets.h"

#include <gtest/gtest.h>

using namespace sdma;

namespace {

constexpr uint64_t MiB = 1ull << 20;

void expectPacket(const uint32_t* pk, uint64_t src, uint64_t dst, uint32_t count) {
    EXPECT_EQ(pk[0], 0x00000001u) << "op COPY (1), sub-op LINEAR (0)";
    EXPECT_EQ(pk[1], count);
    EXPECT_EQ(pk[2], 0u);
    EXPECT_EQ(pk[3], static_cast<uint32_t>(src));
    EXPECT_EQ(pk[4], static_cast<uint32_t>(src >> 32));
    EXPECT_EQ(pk[5], static_cast<uint32_t>(dst));
    EXPECT_EQ(pk[6], static_cast<uint32_t>(dst >> 32));
}

} // namespace

TEST(SdmaPackets, GivenOneByte_ThenOnePacketWithCountZeroPaddedToEightDwords) {
    auto ib = buildLinearCopy(0x1'0000'1000ull, 0x2'0000'0000ull, 1);
    ASSERT_EQ(ib.size(), 8u);
    expectPacket(ib.data(), 0x1'0000'1000ull, 0x2'0000'0000ull, 0);
    EXPECT_EQ(ib[7], header(kOpNop, 0));
}

TEST(SdmaPackets, GivenExactly2MiB_ThenOnePacketWhoseCountFillsTheLimit) {
    auto ib = buildLinearCopy(0, 0x1000, 2 * MiB);
    ASSERT_EQ(ib.size(), 8u);
    expectPacket(ib.data(), 0, 0x1000, 0x1fffff);
    EXPECT_EQ(ib[1] & ~kCountMask, 0u);
}

TEST(SdmaPackets, Given2MiBPlusOne_ThenASecondPacketOfOneByte) {
    auto ib = buildLinearCopy(0x10000, 0x20000, 2 * MiB + 1);
    ASSERT_EQ(ib.size(), 16u);
    expectPacket(&ib[0], 0x10000, 0x20000, 0x1fffff);
    expectPacket(&ib[7], 0x10000 + 2 * MiB, 0x20000 + 2 * MiB, 0);
    EXPECT_EQ(ib[14], 0u);
    EXPECT_EQ(ib[15], 0u);
}

TEST(SdmaPackets, GivenFiveMiB_ThenThreePacketsCarryingTheHighAddressBits) {
    uint64_t src = 0x0000000123456000ull, dst = 0x0000abcd00000000ull;
    auto ib = buildLinearCopy(src, dst, 5 * MiB);
    ASSERT_EQ(ib.size(), 24u);
    const uint32_t counts[] = {0x1fffff, 0x1fffff, 0xfffff};
    for (uint64_t p = 0; p < 3; ++p)
        expectPacket(&ib[p * 7], src + (p << 21), dst + (p << 21), counts[p]);
    for (size_t i = 21; i < 24; ++i)
        EXPECT_EQ(ib[i], 0u) << "NOP padding at dword " << i;
}

TEST(SdmaPackets, GivenNoBytes_ThenTheIbIsEmpty) {
    EXPECT_TRUE(buildLinearCopy(1, 2, 0).empty());
}

TEST(SdmaPackets, GivenSizes_ThenIbDwordsCoverEveryPacketPadded) {
    EXPECT_EQ(ibDwordsFor(0), 8u);
    EXPECT_EQ(ibDwordsFor(1), 8u);
    EXPECT_EQ(ibDwordsFor(2 * MiB), 8u);
    EXPECT_EQ(ibDwordsFor(2 * MiB + 1), 16u);
    EXPECT_EQ(ibDwordsFor(5 * MiB), 24u);
    EXPECT_EQ(ibDwordsFor(64 * MiB), 224u);
    EXPECT_EQ(header(kOpCopy, kSubOpCopyLinear), 1u);
}
