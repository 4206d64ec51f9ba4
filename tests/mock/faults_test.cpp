// Fault injection by configuration: ROOT/faults, "<operation> <nth call>|always", counted across
// processes.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using mocktest::MockMachine;
using testing::HasSubstr;

TEST(MockFaults, GivenUnknownOperation_WhenAddFault_ThenRejectedListingTheAcceptedOnes) {
    MockMachine m;
    auto added = mock::addFault(m.root(), "frobnicate", "1");
    EXPECT_EQ(errorCode(added), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(added), HasSubstr("unknown fault operation 'frobnicate'"));
    EXPECT_THAT(errorText(added), HasSubstr("accepted: alloc, submit, pause, checkpoint"));
    EXPECT_FALSE(std::filesystem::exists(m.root() + "/faults"));
}

TEST(MockFaults, GivenBadWhen_WhenAddFault_ThenRejectedSayingCallNumberOrAlways) {
    MockMachine m;
    for (const char* when : {"", "0", "abc", "2x", "-1", "Always"}) {
        auto added = mock::addFault(m.root(), "alloc", when);
        EXPECT_EQ(errorCode(added), base::ErrorCode::InvalidArgument) << "when='" << when << "'";
        EXPECT_THAT(errorText(added),
                    HasSubstr("is neither a call number (1, 2, ...) nor 'always'"))
            << "when='" << when << "'";
    }
    EXPECT_FALSE(std::filesystem::exists(m.root() + "/faults"));
}

TEST(MockFaults, GivenEveryKnownOperation_WhenAddFault_ThenEachIsAccepted) {
    MockMachine m;
    for (const std::string& op : mock::faultOperations())
        EXPECT_TRUE(mock::addFault(m.root(), op, "3").ok()) << op;
    std::string text = testsupport::readFile(m.root() + "/faults");
    EXPECT_THAT(text, HasSubstr("alloc 3\n"));
    EXPECT_THAT(text, HasSubstr("resume 3\n"));
}

TEST(MockFaults, GivenFaultOnSecondAlloc_WhenAllocatingThreeTimes_ThenOnlyTheSecondFails) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "alloc", "2"));
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));

    ASSERT_OK(mock::allocBo(fd, 64, 1, 0x1000));
    auto second = mock::allocBo(fd, 64, 1, 0x2000);
    EXPECT_EQ(errorCode(second), base::ErrorCode::Injected);
    EXPECT_THAT(errorText(second), HasSubstr("injected fault in alloc (call 2, configured in " +
                                             m.root() + "/faults)"));
    ASSERT_OK(mock::allocBo(fd, 64, 1, 0x2000));

    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.bos.size(), 2u);
    close(fd);
}

TEST(MockFaults, GivenAnErrnoFault_WhenTheCallIsMade_ThenItFailsWithThatErrnoAndCallsAreCounted) {
    MockMachine m;
    ASSERT_OK(mock::addErrnoFault(m.root(), "alloc", "2", ENOSPC));
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 64, 1, 0x1000));
    auto second = mock::allocBo(fd, 64, 1, 0x2000);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().sysErrno(), ENOSPC);
    EXPECT_THAT(errorText(second), HasSubstr("mock GPU: alloc failed (injected ENOSPC: call 2"));
    EXPECT_EQ(mock::countedCalls(m.root(), "alloc"), 2u);
    EXPECT_EQ(mock::countedCalls(m.root(), "submit"), 0u);
    EXPECT_EQ(errorCode(mock::addErrnoFault(m.root(), "alloc", "1", 0)),
              base::ErrorCode::InvalidArgument);
    close(fd);
}

TEST(MockFaults, GivenFaultOnAlloc_WhenSubmitting_ThenOtherOperationsAreUnaffected) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 64, 1, 0x1000));
    ASSERT_OK_ASSIGN(uint32_t q, mock::createQueue(fd));
    ASSERT_OK_ASSIGN(uint32_t e, mock::createEvent(fd));
    ASSERT_OK(mock::addFault(m.root(), "alloc", "always"));
    ASSERT_OK(mock::submit(fd, q, mock::Command{mock::Command::Op::Fill, bo, 0, 1}, e));
    close(fd);
}

TEST(MockFaults, GivenFaultAlways_WhenCallingRepeatedly_ThenEveryCallFails) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 64, 1, 0x1000));
    ASSERT_OK_ASSIGN(uint32_t q, mock::createQueue(fd));
    ASSERT_OK_ASSIGN(uint32_t e, mock::createEvent(fd));
    ASSERT_OK(mock::addFault(m.root(), "submit", "always"));
    for (int i = 1; i <= 4; ++i) {
        auto r = mock::submit(fd, q, mock::Command{mock::Command::Op::Fill, bo, 0, 1}, e);
        EXPECT_EQ(errorCode(r), base::ErrorCode::Injected) << "call " << i;
        EXPECT_THAT(errorText(r), HasSubstr(base::strFormat("submit (call %d", i)));
    }
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.findQueue(q)->submitted, 0u);
    EXPECT_EQ(s.findEvent(e)->signals, 0u);
    close(fd);
}

TEST(MockFaults, GivenFaultOnSecondAlloc_WhenAChildProcessMadeTheFirst_ThenTheParentsCallFails) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "alloc", "2"));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto fd = mock::openDevice(m.root(), 0);
        _exit(fd.ok() && mock::allocBo(*fd, 64, 1, 0x1000).ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's call failed";

    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    auto bo = mock::allocBo(fd, 64, 1, 0x1000);
    EXPECT_EQ(errorCode(bo), base::ErrorCode::Injected);
    EXPECT_THAT(errorText(bo), HasSubstr("call 2"));
    close(fd);
}

TEST(MockFaults, GivenManyProcessesAllocatingAtOnce_WhenCounting_ThenNoCallIsLost) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "alloc", "1000000"));
    constexpr int kChildren = 4;
    constexpr int kCalls = 25;
    std::vector<pid_t> children;
    for (int c = 0; c < kChildren; ++c) {
        pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            auto fd = mock::openDevice(m.root(), 0);
            bool ok = fd.ok();
            for (int i = 0; ok && i < kCalls; ++i)
                ok = mock::allocBo(*fd, 8, 1, 0x1000ull * (i + 1)).ok();
            _exit(ok ? 0 : 1);
        }
        children.push_back(child);
    }
    for (pid_t child : children) {
        int status = 0;
        ASSERT_EQ(waitpid(child, &status, 0), child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(testsupport::readFile(m.root() + "/state/fault-counters/alloc"),
              std::to_string(kChildren * kCalls) + "\n");
}

TEST(MockFaults, GivenFaultsAndCounters_WhenClearFaults_ThenCallsSucceedAndCountingRestarts) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::addFault(m.root(), "alloc", "always"));
    EXPECT_EQ(errorCode(mock::allocBo(fd, 64, 1, 0x1000)), base::ErrorCode::Injected);

    ASSERT_OK(mock::clearFaults(m.root()));
    EXPECT_FALSE(std::filesystem::exists(m.root() + "/faults"));
    ASSERT_OK(mock::allocBo(fd, 64, 1, 0x1000));

    ASSERT_OK(mock::addFault(m.root(), "alloc", "1"));
    EXPECT_EQ(errorCode(mock::allocBo(fd, 64, 1, 0x2000)), base::ErrorCode::Injected);
    close(fd);
}

// A workload keeps calling while the user adds and clears faults (`mock fault --op/--clear`):
// no call may fail on the faults file or the counters' directory vanishing under it; only a
// configured fault fails a call.
TEST(
    MockFaults,
    GivenCallsRunningInAChild_WhenFaultsAreAddedAndClearedRepeatedly_ThenNoCallFailsOtherThanInjected) {
    MockMachine m;
    constexpr int kCalls = 3000;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        for (int i = 0; i < kCalls; ++i) {
            auto r = mock::checkFault(m.root(), "submit");
            if (!r.ok() && errorCode(r) != base::ErrorCode::Injected) {
                fprintf(stderr, "call %d: %s\n", i, r.error().describe().c_str());
                _exit(1);
            }
        }
        _exit(0);
    }
    int status = 0;
    pid_t done = 0;
    for (int round = 0; (done = waitpid(child, &status, WNOHANG)) == 0; ++round) {
        ASSERT_OK(mock::addFault(m.root(), round % 2 ? "submit" : "alloc", "7"));
        ASSERT_OK(mock::clearFaults(m.root()));
    }
    ASSERT_EQ(done, child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a call failed on something other than an injected fault";
}

/// Runs checkFault(`operation`) in a child; the child's exit status says how the call ended: 0
/// it ran, 2 it failed with an Injected error, 1 anything else.
pid_t checkInChild(const std::string& root, const std::string& operation) {
    pid_t child = fork();
    if (child == 0) {
        auto r = mock::checkFault(root, operation);
        _exit(r.ok() ? 0 : errorCode(r) == base::ErrorCode::Injected ? 2 : 1);
    }
    return child;
}

/// Waits up to 5 s for `path` to appear.
bool appears(const std::string& path) {
    for (int i = 0; i < 500; ++i) {
        if (std::filesystem::exists(path))
            return true;
        usleep(10000);
    }
    return false;
}

int exitStatusOf(pid_t child) {
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(MockFaults,
     GivenAStallOnTheSecondCheckpoint_WhenItsMarkerIsRemoved_ThenThatCallWaitedAndRuns) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "checkpoint", "2", mock::FaultKind::Stall));
    EXPECT_EQ(testsupport::readFile(m.root() + "/faults"), "checkpoint 2 stall\n");
    ASSERT_OK(mock::checkFault(m.root(), "checkpoint")); // call 1 runs at once
    pid_t child = checkInChild(m.root(), "checkpoint");
    ASSERT_GT(child, 0);
    std::string marker = mock::stallMarker(m.root());
    ASSERT_TRUE(appears(marker)) << "the stalled call wrote no " << marker;
    EXPECT_EQ(testsupport::readFile(marker), "checkpoint 2 " + std::to_string(child) + "\n");
    // It holds no lock while it waits: other calls go on.
    ASSERT_OK(mock::checkFault(m.root(), "checkpoint"));
    ASSERT_OK(mock::checkFault(m.root(), "pause"));
    usleep(50000);
    EXPECT_EQ(waitpid(child, nullptr, WNOHANG), 0) << "the stalled call did not wait";
    std::filesystem::remove(marker);
    EXPECT_EQ(exitStatusOf(child), 0) << "the released call did not run";
}

TEST(MockFaults, GivenAStalledCall_WhenClearFaults_ThenItIsReleasedAndRuns) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "pause", "1", mock::FaultKind::Stall));
    pid_t child = checkInChild(m.root(), "pause");
    ASSERT_GT(child, 0);
    ASSERT_TRUE(appears(mock::stallMarker(m.root())));
    ASSERT_OK(mock::clearFaults(m.root()));
    EXPECT_EQ(exitStatusOf(child), 0);
    EXPECT_FALSE(std::filesystem::exists(mock::stallMarker(m.root())));
}

TEST(MockFaults, GivenFaultsFileWithCommentsAndBlankLines_WhenChecking_ThenTheyAreIgnored) {
    MockMachine m;
    testsupport::writeFile(m.root() + "/faults", "# alloc 1\n\n   \nalloc\nsubmit 1\n");
    ASSERT_OK(mock::checkFault(m.root(), "alloc"));
    EXPECT_EQ(errorCode(mock::checkFault(m.root(), "submit")), base::ErrorCode::Injected);
}

TEST(MockFaults, GivenPauseFault_WhenCriuPause_ThenInjectedAndTheContextStaysRunning) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::addFault(m.root(), "pause", "1"));
    mock::Context ctx(m.root(), 1);
    EXPECT_EQ(errorCode(mock::criuPause(m.root(), ctx)), base::ErrorCode::Injected);
    EXPECT_FALSE(ctx.pausedMarker());
    ASSERT_OK(mock::criuPause(m.root(), ctx));
    EXPECT_TRUE(ctx.pausedMarker());
    close(fd);
}

TEST(MockFaults, GivenRestoreFault_WhenCriuRestore_ThenInjectedAndNoContextCreated) {
    MockMachine m;
    ASSERT_OK(mock::addFault(m.root(), "restore", "always"));
    mock::ContextState snapshot;
    snapshot.gpuId = snapshot.userGpuId = m.gpuId(0);
    auto ctx = mock::criuRestore(m.root(), snapshot, m.gpuId(0), 128, 1, 1);
    EXPECT_EQ(errorCode(ctx), base::ErrorCode::Injected);
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
}

} // namespace
