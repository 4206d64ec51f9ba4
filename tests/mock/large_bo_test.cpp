// A mock BO past 32 bits (issue 22 item 5): a 5 GiB + 4096 BO (a sparse data file) written and
// read at offsets 2^31 - 1, 2^31, 2^32, 2^32 + 4096 and 5 GiB through the fd its dump and
// parallel restore use (criuExportBo, criuReadBoFd, criuWriteBoFd), and through the client's
// readBo: every byte lands where it was written. Nothing of that size is allocated.
#include "mock_fixture.h"

#include "mockgpu/bo_export.h"
#include "mockgpu/client.h"

#include <unistd.h>

#include <vector>

namespace {

using mocktest::MockMachine;

constexpr uint64_t kGiB = 1ull << 30;
const std::vector<uint64_t> kOffsets = {(1ull << 31) - 1, 1ull << 31, 1ull << 32,
                                        (1ull << 32) + 4096, 5 * kGiB};

TEST(MockLargeBo,
     GivenABoPast5GiB_WhenWrittenAndReadAtOffsetsPast32Bits_ThenEveryByteIsWhereItWasWritten) {
    constexpr uint64_t kSize = 5 * kGiB + 4096;
    MockMachine m(1, 8 * kGiB);
    ASSERT_OK_ASSIGN(int gpu, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(gpu, kSize, 1, 0x100000000));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK_ASSIGN(int exported, mock::criuExportBo(ctx, bo, true));
    for (size_t i = 0; i < kOffsets.size(); ++i) {
        std::vector<std::byte> in(4096, static_cast<std::byte>(0x10 + i));
        ASSERT_OK(mock::criuWriteBoFd(m.root(), exported, kOffsets[i], in, "BO 1"));
    }
    for (size_t i = 0; i < kOffsets.size(); ++i) {
        std::vector<std::byte> viaFd(4096), viaClient(4096);
        ASSERT_OK(mock::criuReadBoFd(m.root(), exported, kOffsets[i], viaFd, "BO 1"));
        ASSERT_OK(mock::readBo(gpu, bo, kOffsets[i], viaClient));
        // Each block ends where the next offset's begins (2^31 - 1 and 2^31 overlap by 4095).
        uint64_t untilNext = i + 1 < kOffsets.size() ? kOffsets[i + 1] - kOffsets[i] : 4096;
        for (size_t b = 0; b < std::min<uint64_t>(4096, untilNext); b += 1024) {
            EXPECT_EQ(viaFd[b], static_cast<std::byte>(0x10 + i)) << kOffsets[i] << "+" << b;
            EXPECT_EQ(viaClient[b], static_cast<std::byte>(0x10 + i)) << kOffsets[i] << "+" << b;
        }
    }
    // Past the BO's end there is nothing to read.
    std::vector<std::byte> beyond(4096);
    EXPECT_FALSE(mock::readBo(gpu, bo, kSize - 4095, beyond).ok());
    close(exported);
    close(gpu);
}

} // namespace
