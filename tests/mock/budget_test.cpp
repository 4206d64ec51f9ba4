// The per-GPU memory budget: machine.conf budget_bytes (or VRAM) bounds every context of a GPU.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/machine.h"

#include <unistd.h>

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using mocktest::MockMachine;
using testing::HasSubstr;

TEST(MockBudget, GivenBudgetAndTwoContexts_WhenTheSecondExceedsIt_ThenOutOfMemoryWithNumbers) {
    MockMachine m(2);
    m.setBudget(4096);
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(a, 3072, 1, 0x1000));

    auto bo = mock::allocBo(b, 2048, 1, 0x1000);

    EXPECT_EQ(errorCode(bo), base::ErrorCode::OutOfMemory);
    ASSERT_FALSE(bo.ok());
    EXPECT_EQ(bo.error().sysErrno(), ENOMEM);
    EXPECT_THAT(errorText(bo),
                HasSubstr("mock GPU 0x1000: 2048 bytes requested, 3072 of 4096 in use"));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(b));
    EXPECT_TRUE(s.bos.empty());
    close(a);
    close(b);
}

TEST(MockBudget, GivenBudget_WhenAllocationsFillItExactly_ThenTheyAllSucceed) {
    MockMachine m(1);
    m.setBudget(4096);
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(a, 2048, 1, 0x1000));
    ASSERT_OK(mock::allocBo(b, 2048, 1, 0x1000));
    EXPECT_EQ(errorCode(mock::allocBo(b, 8, 1, 0x10000)), base::ErrorCode::OutOfMemory);
    close(a);
    close(b);
}

TEST(MockBudget, GivenFullFirstGpu_WhenAllocatingOnTheSecondGpu_ThenItIsUnaffected) {
    MockMachine m(2);
    m.setBudget(4096);
    ASSERT_OK_ASSIGN(int g0, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int g1, mock::openDevice(m.root(), 1));
    ASSERT_OK(mock::allocBo(g0, 4096, 1, 0x1000));
    ASSERT_OK(mock::allocBo(g1, 4096, 1, 0x1000));
    ASSERT_OK_ASSIGN(uint64_t used0, mock::gpuMemoryInUse(m.root(), m.gpuId(0)));
    ASSERT_OK_ASSIGN(uint64_t used1, mock::gpuMemoryInUse(m.root(), m.gpuId(1)));
    EXPECT_EQ(used0, 4096u);
    EXPECT_EQ(used1, 4096u);
    close(g0);
    close(g1);
}

TEST(MockBudget, GivenFullGpu_WhenAContextIsClosed_ThenItsMemoryIsAvailableAgain) {
    MockMachine m(1);
    m.setBudget(4096);
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(a, 4096, 1, 0x1000));
    ASSERT_OK(mock::closeDevice(a));
    ASSERT_OK(mock::allocBo(b, 4096, 1, 0x1000));
    close(b);
}

TEST(MockBudget, GivenNoOverride_WhenAllocatingBeyondVram_ThenOutOfMemory) {
    MockMachine m(1, 1ull << 20);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    auto bo = mock::allocBo(fd, (1ull << 20) + 8, 1, 0x1000);
    EXPECT_THAT(errorText(bo), HasSubstr("of 1048576 in use"));
    close(fd);
}

/// A snapshot holding buffers of these sizes.
mock::ContextState snapshotWith(std::vector<uint64_t> sizes) {
    mock::ContextState s;
    s.gpuId = s.userGpuId = 0x1000;
    s.renderMinor = 128;
    for (uint64_t size : sizes) {
        mock::BufferObject bo{s.nextHandle++, size, 0x100000ull * s.nextHandle, 1};
        s.bos.push_back(bo);
    }
    return s;
}

TEST(MockBudget, GivenGpuWithoutRoom_WhenCriuRestore_ThenOutOfMemoryAndNoContextLeft) {
    MockMachine m(1);
    m.setBudget(8192);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 4096, 1, 0x1000));

    auto ctx = mock::criuRestore(m.root(), snapshotWith({4096, 4096}), m.gpuId(0), 128, 4242, 7);

    EXPECT_EQ(errorCode(ctx), base::ErrorCode::OutOfMemory);
    EXPECT_THAT(errorText(ctx),
                HasSubstr("mock GPU 0x1000 cannot hold the restored buffers: 8192 bytes needed, "
                          "4096 of 8192 in use"));
    EXPECT_EQ(mocktest::contextCount(m.root()), 1u);
    close(fd);
}

TEST(MockBudget, GivenRoomOnTheSecondGpu_WhenCriuRestoreThere_ThenPausedContextOwnedAsAsked) {
    MockMachine m(2);
    m.setBudget(8192);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 8192, 1, 0x1000));

    ASSERT_OK_ASSIGN(mock::Context ctx, mock::criuRestore(m.root(), snapshotWith({4096, 4096}),
                                                          m.gpuId(1), 129, 4242, 77));

    ASSERT_OK_ASSIGN(mock::ContextState s, ctx.load());
    EXPECT_EQ(s.gpuId, m.gpuId(1));
    EXPECT_EQ(s.userGpuId, 0x1000u); // what the process saw before
    EXPECT_EQ(s.renderMinor, 129);
    EXPECT_EQ(s.ownerPid, 4242);
    EXPECT_EQ(s.restoreSession, 77u);
    EXPECT_TRUE(s.paused);
    EXPECT_TRUE(ctx.pausedMarker());
    ASSERT_OK_ASSIGN(uint64_t used, mock::gpuMemoryInUse(m.root(), m.gpuId(1)));
    EXPECT_EQ(used, 8192u);
    close(fd);
}

// Sizes whose sum wraps around 2^64 must not slip under the budget.
TEST(MockBudget, GivenASizeThatWrapsTheSum_WhenAllocating_ThenOutOfMemoryAndNothingAllocated) {
    MockMachine m(1);
    m.setBudget(8192);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 4096, 1, 0x1000));
    uint64_t huge = UINT64_MAX - 7; // a multiple of 8: 4096 + huge wraps to 4088
    auto bo = mock::allocBo(fd, huge, 1, 0x100000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::OutOfMemory) << errorText(bo);
    EXPECT_THAT(errorText(bo), HasSubstr("18446744073709551608 bytes requested, 4096 of 8192"));
    ASSERT_OK_ASSIGN(uint64_t used, mock::gpuMemoryInUse(m.root(), m.gpuId(0)));
    EXPECT_EQ(used, 4096u);
    auto past = mock::allocBo(fd, 4096, 1, UINT64_MAX - 4095 + 8);
    EXPECT_EQ(errorCode(past), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(past), HasSubstr("runs past the end of the address space"));
    close(fd);
}

TEST(MockBudget, GivenASnapshotWhoseSizesWrap_WhenCriuRestore_ThenOutOfMemoryAndNoContextLeft) {
    MockMachine m(1);
    m.setBudget(8192);
    auto ctx = mock::criuRestore(m.root(), snapshotWith({1ull << 63, 1ull << 63, 4096}), m.gpuId(0),
                                 128, 4242, 7);
    EXPECT_EQ(errorCode(ctx), base::ErrorCode::OutOfMemory);
    EXPECT_THAT(errorText(ctx), HasSubstr("18446744073709551615 bytes needed, 0 of 8192 in use"));
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
}

TEST(MockBudget, SumsSaturateInsteadOfWrapping) {
    EXPECT_EQ(mock::saturatingAdd(1, 2), 3u);
    EXPECT_EQ(mock::saturatingAdd(UINT64_MAX - 1, 1), UINT64_MAX);
    EXPECT_EQ(mock::saturatingAdd(1ull << 63, 1ull << 63), UINT64_MAX);
    EXPECT_TRUE(mock::fitsBudget(4096, 4096, 8192));
    EXPECT_FALSE(mock::fitsBudget(4096, UINT64_MAX - 7, 8192));
    EXPECT_FALSE(mock::fitsBudget(8193, 0, 8192));
}

} // namespace
