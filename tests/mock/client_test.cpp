// The user side of the mock GPU: contexts reached through an fd alone, buffer objects, queues.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/machine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using mocktest::Fd;
using mocktest::MockMachine;
using mocktest::pattern;
using mocktest::readAll;
using testing::HasSubstr;

std::string linkOf(int fd) {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
}

TEST(MockClient, GivenMachine_WhenOpenDevice_ThenContextNodeIsACharDeviceWithTheMachinesNumbers) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(m.root()));

    std::string node = m.root() + "/state/contexts/1/renderD128";
    EXPECT_EQ(linkOf(fd), node);
    struct stat st;
    ASSERT_EQ(stat(node.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, cfg.deviceRdev);
    struct stat fst;
    ASSERT_EQ(fstat(fd, &fst), 0);
    EXPECT_EQ(fst.st_rdev, cfg.deviceRdev);
}

TEST(MockClient, GivenMachine_WhenOpenDevice_ThenFdIsInheritableByChildren) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
}

TEST(MockClient, GivenOneGpu_WhenOpenSecondGpuIndex_ThenNotFoundNamingTheCount) {
    MockMachine m(1);
    auto fd = mock::openDevice(m.root(), 1);
    EXPECT_EQ(errorCode(fd), base::ErrorCode::NotFound);
    EXPECT_THAT(errorText(fd), HasSubstr("has 1 GPUs; GPU index 1 does not exist"));
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
}

TEST(MockClient, GivenTwoFds_WhenAllocatingOnEach_ThenEachFdReachesItsOwnContext) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    Fd gb{b};
    ASSERT_OK_ASSIGN(uint32_t boA, mock::allocBo(a, 64, 1, 0x1000));
    ASSERT_OK_ASSIGN(uint32_t boB, mock::allocBo(b, 64, 1, 0x1000)); // same VA: other context
    ASSERT_OK(mock::writeBo(a, boA, 0, pattern(64, 1)));
    ASSERT_OK(mock::writeBo(b, boB, 0, pattern(64, 2)));

    EXPECT_EQ(readAll(a, boA, 64), pattern(64, 1));
    EXPECT_EQ(readAll(b, boB, 64), pattern(64, 2));
    ASSERT_OK_ASSIGN(mock::ContextState sa, mock::queryContext(a));
    ASSERT_OK_ASSIGN(mock::ContextState sb, mock::queryContext(b));
    EXPECT_EQ(sa.bos.size(), 1u);
    EXPECT_EQ(sb.bos.size(), 1u);
    EXPECT_EQ(mocktest::contextCount(m.root()), 2u);
}

TEST(MockClient, GivenTwoFds_WhenUsingAHandleOfTheOtherContext_ThenNoSuchBufferObject) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    Fd gb{b};
    ASSERT_OK(mock::allocBo(a, 64, 1, 0x1000));
    ASSERT_OK(mock::allocBo(a, 64, 1, 0x2000));
    ASSERT_OK(mock::allocBo(b, 64, 1, 0x1000));
    std::vector<std::byte> out(8);
    auto read = mock::readBo(b, 2, 0, out);
    EXPECT_EQ(errorCode(read), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(read), HasSubstr("no buffer object 2"));
}

TEST(MockClient, GivenDevice_WhenAllocZeroBytes_ThenInvalidArgument) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    auto bo = mock::allocBo(fd, 0, 1, 0x1000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(bo), HasSubstr("buffer size 0 is not a positive multiple of 8"));
}

TEST(MockClient, GivenDevice_WhenAllocSizeNotMultipleOf8_ThenInvalidArgument) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    auto bo = mock::allocBo(fd, 100, 1, 0x1000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(bo), HasSubstr("buffer size 100 is not a positive multiple of 8"));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_TRUE(s.bos.empty());
}

TEST(MockClient, GivenBufferAtVa_WhenAllocOverlappingVa_ThenRejectedNamingTheBuffer) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t first, mock::allocBo(fd, 0x1000, 1, 0x10000));
    auto overlapping = mock::allocBo(fd, 0x1000, 1, 0x10800);
    EXPECT_EQ(errorCode(overlapping), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(overlapping),
                HasSubstr(base::strFormat("overlaps buffer object %u", first)));
    auto below = mock::allocBo(fd, 0x1000, 1, 0xf800);
    EXPECT_THAT(errorText(below), HasSubstr("overlaps"));
}

TEST(MockClient, GivenBufferAtVa_WhenAllocAdjacentVa_ThenAccepted) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK(mock::allocBo(fd, 0x1000, 1, 0x10000));
    ASSERT_OK(mock::allocBo(fd, 0x1000, 1, 0x11000));
    ASSERT_OK(mock::allocBo(fd, 0x1000, 1, 0xf000));
}

TEST(MockClient, GivenBuffer_WhenWriteThenRead_ThenBytesRoundTripAtAnOffset) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 200 * 1024, 1, 0x100000));
    auto data = pattern(100 * 1024 + 3, 9);
    ASSERT_OK(mock::writeBo(fd, bo, 4096 + 5, data));
    std::vector<std::byte> back(data.size());
    ASSERT_OK(mock::readBo(fd, bo, 4096 + 5, back));
    EXPECT_EQ(back, data);
    std::vector<std::byte> head(4096);
    ASSERT_OK(mock::readBo(fd, bo, 0, head));
    EXPECT_EQ(head, std::vector<std::byte>(4096)); // a new buffer reads as zeros
}

TEST(MockClient, GivenBuffer_WhenReadPastItsEnd_ThenRangeRejected) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 64, 1, 0x1000));
    std::vector<std::byte> out(16);
    auto read = mock::readBo(fd, bo, 56, out);
    EXPECT_EQ(errorCode(read), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(read), HasSubstr("range 56+16 is outside buffer object 1 of 64 bytes"));
}

TEST(MockClient, GivenBuffer_WhenWriteAtHugeOffset_ThenRangeRejectedWithoutOverflow) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 64, 1, 0x1000));
    auto data = pattern(16, 1);
    auto write = mock::writeBo(fd, bo, ~uint64_t(0) - 4, data);
    EXPECT_EQ(errorCode(write), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(write), HasSubstr("is outside buffer object 1"));
}

TEST(MockClient, GivenBuffer_WhenWriteEndingExactlyAtItsEnd_ThenAccepted) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 64, 1, 0x1000));
    ASSERT_OK(mock::writeBo(fd, bo, 48, pattern(16, 1)));
}

/// A context with one queue, one event and `n` buffers of `size` bytes.
struct Workspace {
    int fd = -1;
    uint32_t queue = 0;
    uint32_t event = 0;
    std::vector<uint32_t> bos;
};

Workspace makeWorkspace(const std::string& root, unsigned n, uint64_t size) {
    Workspace s;
    auto fd = mock::openDevice(root, 0);
    EXPECT_TRUE(fd.ok()) << fd.error().describe();
    if (!fd.ok())
        return s;
    s.fd = *fd;
    s.queue = mock::createQueue(s.fd).valueOr(0);
    s.event = mock::createEvent(s.fd).valueOr(0);
    for (unsigned i = 0; i < n; ++i)
        s.bos.push_back(mock::allocBo(s.fd, size, 1, 0x100000 * (i + 1)).valueOr(0));
    return s;
}

mock::Command fill(uint32_t dst, uint64_t seed) {
    return mock::Command{mock::Command::Op::Fill, dst, 0, seed};
}

mock::Command mix(uint32_t dst, uint32_t src, uint64_t step) {
    return mock::Command{mock::Command::Op::Mix, dst, src, step};
}

// Larger than the driver's 64 KiB chunk, so the chunked loop is exercised.
constexpr uint64_t kSize = 96 * 1024;

TEST(MockClient, GivenTwoBuffers_WhenFilledWithTheSameSeed_ThenTheirBytesAreIdenticalAndNonZero) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 2, kSize);
    Fd guard{s.fd};
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[0], 42), s.event));
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[1], 42), s.event));
    auto a = readAll(s.fd, s.bos[0], kSize);
    EXPECT_EQ(a, readAll(s.fd, s.bos[1], kSize));
    EXPECT_NE(a, std::vector<std::byte>(kSize));
}

TEST(MockClient, GivenTwoBuffers_WhenFilledWithDifferentSeeds_ThenTheirBytesDiffer) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 2, kSize);
    Fd guard{s.fd};
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[0], 42), s.event));
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[1], 43), s.event));
    EXPECT_NE(readAll(s.fd, s.bos[0], kSize), readAll(s.fd, s.bos[1], kSize));
}

TEST(MockClient, GivenTwoMachines_WhenFilledWithTheSameSeed_ThenBytesAreTheSameAcrossRuns) {
    MockMachine m1, m2;
    Workspace s1 = makeWorkspace(m1.root(), 1, kSize);
    Fd g1{s1.fd};
    Workspace s2 = makeWorkspace(m2.root(), 1, kSize);
    Fd g2{s2.fd};
    ASSERT_OK(mock::submit(s1.fd, s1.queue, fill(s1.bos[0], 7), s1.event));
    ASSERT_OK(mock::submit(s2.fd, s2.queue, fill(s2.bos[0], 7), s2.event));
    EXPECT_EQ(readAll(s1.fd, s1.bos[0], kSize), readAll(s2.fd, s2.bos[0], kSize));
}

/// Result of mix(dst, src, 1) after filling dst with `dstSeed` and src with `srcSeed`.
std::vector<std::byte> mixed(uint64_t dstSeed, uint64_t srcSeed) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 2, kSize);
    Fd guard{s.fd};
    EXPECT_TRUE(mock::submit(s.fd, s.queue, fill(s.bos[0], dstSeed), s.event).ok());
    EXPECT_TRUE(mock::submit(s.fd, s.queue, fill(s.bos[1], srcSeed), s.event).ok());
    auto before = readAll(s.fd, s.bos[0], kSize);
    auto source = readAll(s.fd, s.bos[1], kSize);
    auto r = mock::submit(s.fd, s.queue, mix(s.bos[0], s.bos[1], 1), s.event);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    auto after = readAll(s.fd, s.bos[0], kSize);
    EXPECT_NE(before, after);
    EXPECT_EQ(readAll(s.fd, s.bos[1], kSize), source); // the source is only read
    return after;
}

TEST(MockClient, GivenMix_WhenOnlyTheSourceDiffers_ThenTheResultDiffers) {
    EXPECT_NE(mixed(1, 2), mixed(1, 3));
}

TEST(MockClient, GivenMix_WhenOnlyTheDestinationDiffers_ThenTheResultDiffers) {
    EXPECT_NE(mixed(1, 2), mixed(4, 2));
}

TEST(MockClient, GivenMix_WhenRepeatedWithTheSameInputs_ThenTheResultIsTheSame) {
    EXPECT_EQ(mixed(5, 6), mixed(5, 6));
}

TEST(MockClient, GivenSmallerSource_WhenMix_ThenRejectedAndCountersUnchanged) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(uint32_t q, mock::createQueue(fd));
    ASSERT_OK_ASSIGN(uint32_t e, mock::createEvent(fd));
    ASSERT_OK_ASSIGN(uint32_t big, mock::allocBo(fd, 128, 1, 0x1000));
    ASSERT_OK_ASSIGN(uint32_t small, mock::allocBo(fd, 64, 1, 0x2000));
    auto r = mock::submit(fd, q, mix(big, small, 1), e);
    EXPECT_THAT(errorText(r), HasSubstr("source BO 2 is smaller than destination BO 1"));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.findQueue(q)->completed, 0u);
    EXPECT_EQ(s.findEvent(e)->signals, 0u);
}

TEST(MockClient, GivenQueueAndEvent_WhenSubmittingThreeCommands_ThenCountersAdvanceByThree) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 2, 64);
    Fd guard{s.fd};
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[0], 1), s.event));
    ASSERT_OK(mock::submit(s.fd, s.queue, fill(s.bos[1], 2), s.event));
    ASSERT_OK(mock::submit(s.fd, s.queue, mix(s.bos[0], s.bos[1], 1), s.event));
    ASSERT_OK_ASSIGN(mock::ContextState st, mock::queryContext(s.fd));
    ASSERT_NE(st.findQueue(s.queue), nullptr);
    EXPECT_EQ(st.findQueue(s.queue)->submitted, 3u);
    EXPECT_EQ(st.findQueue(s.queue)->completed, 3u);
    ASSERT_NE(st.findEvent(s.event), nullptr);
    EXPECT_EQ(st.findEvent(s.event)->signals, 3u);
}

TEST(MockClient, GivenTwoQueuesAndEvents_WhenSubmittingOnOne_ThenOnlyItsCountersAdvance) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 1, 64);
    Fd guard{s.fd};
    ASSERT_OK_ASSIGN(uint32_t q2, mock::createQueue(s.fd));
    ASSERT_OK_ASSIGN(uint32_t e2, mock::createEvent(s.fd));
    EXPECT_NE(q2, s.queue);
    EXPECT_NE(e2, s.event);
    ASSERT_OK(mock::submit(s.fd, q2, fill(s.bos[0], 1), e2));
    ASSERT_OK_ASSIGN(mock::ContextState st, mock::queryContext(s.fd));
    EXPECT_EQ(st.findQueue(s.queue)->completed, 0u);
    EXPECT_EQ(st.findQueue(q2)->completed, 1u);
    EXPECT_EQ(st.findEvent(s.event)->signals, 0u);
    EXPECT_EQ(st.findEvent(e2)->signals, 1u);
}

TEST(MockClient, GivenUnknownQueue_WhenSubmit_ThenNoQueueError) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 1, 64);
    Fd guard{s.fd};
    auto r = mock::submit(s.fd, 99, fill(s.bos[0], 1), s.event);
    EXPECT_EQ(errorCode(r), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(r), HasSubstr("no queue 99"));
}

TEST(MockClient, GivenUnknownEvent_WhenSubmit_ThenNoEventError) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 1, 64);
    Fd guard{s.fd};
    auto r = mock::submit(s.fd, s.queue, fill(s.bos[0], 1), 77);
    EXPECT_THAT(errorText(r), HasSubstr("no event 77"));
}

TEST(MockClient, GivenUnknownBuffer_WhenSubmitFill_ThenNoBufferObjectAndNothingCompleted) {
    MockMachine m;
    Workspace s = makeWorkspace(m.root(), 1, 64);
    Fd guard{s.fd};
    auto r = mock::submit(s.fd, s.queue, fill(55, 1), s.event);
    EXPECT_THAT(errorText(r), HasSubstr("no buffer object 55"));
    ASSERT_OK_ASSIGN(mock::ContextState st, mock::queryContext(s.fd));
    EXPECT_EQ(st.findQueue(s.queue)->completed, 0u);
}

TEST(MockClient, GivenSecondGpuOpened_WhenQueryContext_ThenReportsThatGpusId) {
    MockMachine m(2);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 1));
    Fd guard{fd};
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.userGpuId, m.gpuId(1));
    EXPECT_EQ(s.gpuId, m.gpuId(1));
    EXPECT_EQ(s.renderMinor, 129);
    EXPECT_EQ(s.ownerPid, mock::hostPid());
    EXPECT_FALSE(s.paused);
}

TEST(MockClient, GivenOpenDevice_WhenCloseDevice_ThenContextDirectoryIsRemovedAndFdClosed) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 64, 1, 0x1000));
    ASSERT_OK(mock::closeDevice(fd));
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
    EXPECT_EQ(fcntl(fd, F_GETFD), -1);
    EXPECT_EQ(errno, EBADF);
}

TEST(MockClient, GivenTwoOpenDevices_WhenClosingOne_ThenTheOtherStillWorks) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    Fd gb{b};
    ASSERT_OK(mock::closeDevice(a));
    ASSERT_OK(mock::allocBo(b, 64, 1, 0x1000));
    EXPECT_EQ(mocktest::contextCount(m.root()), 1u);
}

TEST(MockClient, GivenOpenDevice_WhenMachineIsResetAndTheOldFdUsed_ThenSaysItWasReset) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    Fd guard{fd};
    ASSERT_OK(mock::resetMachine(m.root()));
    auto bo = mock::allocBo(fd, 64, 1, 0x1000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::NotPresent);
    EXPECT_THAT(errorText(bo),
                HasSubstr(base::strFormat("the mock GPU device of fd %d was reset", fd)));
    EXPECT_THAT(errorText(mock::queryContext(fd)), HasSubstr("was reset"));
}

TEST(MockClient, GivenFdOfAnOrdinaryFile_WhenUsedAsDevice_ThenNotAMockGpuDevice) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "file", "hello");
    int fd = open((dir / "file").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    Fd guard{fd};
    auto bo = mock::allocBo(fd, 64, 1, 0x1000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(bo), HasSubstr(base::strFormat("fd %d (%s) is not a mock GPU device", fd,
                                                         (dir / "file").c_str())));
}

TEST(MockClient, GivenFileInsideAContextDirectory_WhenUsedAsDevice_ThenNotAMockGpuDevice) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int dev, mock::openDevice(m.root(), 0));
    Fd gd{dev};
    int fd = open((m.root() + "/state/contexts/1/state").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    Fd guard{fd};
    EXPECT_THAT(errorText(mock::queryContext(fd)), HasSubstr("is not a mock GPU device"));
}

TEST(MockClient, GivenClosedFd_WhenUsedAsDevice_ThenNotAnOpenMockGpuDevice) {
    auto s = mock::queryContext(1000);
    EXPECT_EQ(errorCode(s), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(s), HasSubstr("fd 1000 is not an open mock GPU device"));
}

} // namespace
