// PluginSession dumping a process (this one) that has a mock GPU open, with the real mock backend
// loaded from the build's backend directory: the criu 4.x order pause -> checkpoint -> dump file
// -> exit, the criu 3.x order (dump file alone), and a fault injected into the checkpoint.

#include "fake_criu.h"
#include "fault_sweep.h"
#include "mock_fault_plan.h"
#include "temp_dir.h"

#include "mockgpu/client.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include "coordination/paused_record.h"
#include "formats/topology_codec.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace {

using fakecriu::fake;

class MockDumpSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        if (geteuid() != 0)
            GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
        root_ = makeMockMachine();
        uint32_t bo = 0;
        openMockGpuWithBo(root_, std::vector<std::byte>(8192, std::byte{0x5a}), &gpuFd_, &bo);
        openPlainFiles();
    }

    void TearDown() override {
        session_.exit(frontend::kStageDump, -1); // unpauses whatever a failed test left paused
        if (gpuFd_ >= 0) {
            auto closed = mock::closeDevice(gpuFd_);
            EXPECT_TRUE(closed.ok()) << closed.error().describe();
        }
        SessionTest::TearDown();
    }

    /// Starts the dump session with the mock backend.
    void initDump(frontend::CriuAbi abi = fakecriu::abi41(), std::string guardianDir = "") {
        frontend::PluginSession::Host h =
            host({{"CRIU_AMDGPU_MOCK_ROOT", root_},
                  {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                 std::move(abi));
        h.guardianDir = std::move(guardianDir);
        int r = session_.init(frontend::kStageDump, std::move(h));
        ASSERT_EQ(r, 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(session_.backendName(), "mock");
    }

    /// Whether the context behind gpuFd_ has its queues paused.
    bool paused() const {
        auto state = mock::queryContext(gpuFd_);
        EXPECT_TRUE(state.ok()) << state.error().describe();
        return state.ok() && state->paused;
    }

    std::string root_;
    int gpuFd_ = -1;
    frontend::PluginSession session_;
};

TEST_F(MockDumpSession, GivenProcessWithMockContext_WhenPauseDevices_ThenZeroAndQueuesPaused) {
    initDump();
    ASSERT_FALSE(paused());
    EXPECT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(paused());
}

TEST_F(MockDumpSession,
       GivenProcessWithMockContext_WhenPauseDevices_ThenRegisteredInInventoryOnce) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(fake().added, std::vector<std::string>{"amdgpu_plugin"});
}

TEST_F(MockDumpSession,
       GivenProcessWithoutMockContext_WhenPauseDevices_ThenENOTSUPAndNotRegistered) {
    initDump();
    EXPECT_EQ(session_.pauseDevices(getppid()), -ENOTSUP) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(fake().added.empty());
}

// The topology image records the GPUs the dumped processes use: it is written with the first
// file, once criu has paused and checkpointed every process.
TEST_F(MockDumpSession,
       GivenPausedProcess_WhenCheckpointDevices_ThenZeroAndTheTopologyWaitsForTheFirstFile) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(imageExists(formats::kTopologyImageName));
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(imageExists(formats::kTopologyImageName));
}

TEST_F(MockDumpSession, GivenProcessNotPaused_WhenCheckpointDevices_ThenENOTSUP) {
    initDump();
    EXPECT_EQ(session_.checkpointDevices(getpid()), -ENOTSUP);
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(MockDumpSession, GivenCheckpointedProcess_WhenDumpExtFileOfMockFd_ThenZeroAndImagesWritten) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(imageExists("amdgpu-renderD-7.img"));
    EXPECT_TRUE(imageExists("amdgpu-topology.img"));
}

TEST_F(MockDumpSession, GivenCheckpointedProcess_WhenDumpExtFileOfDevNull_ThenENOTSUP) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.dumpExtFile(devNull_, 8), -ENOTSUP);
    EXPECT_FALSE(imageExists("amdgpu-renderD-8.img"));
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(MockDumpSession, GivenDumpedProcess_WhenExitAfterSuccess_ThenQueuesUnpaused) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(paused());
    session_.exit(frontend::kStageDump, 0);
    EXPECT_FALSE(paused());
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(MockDumpSession, GivenPausedProcess_WhenExitAfterFailedDump_ThenQueuesUnpaused) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(paused());
    session_.exit(frontend::kStageDump, -1);
    EXPECT_FALSE(paused());
}

TEST_F(MockDumpSession, GivenCriu3WithoutPauseHooks_WhenDumpExtFile_ThenZeroAndImagesWritten) {
    initDump(fakecriu::abi317());
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(imageExists("amdgpu-renderD-7.img"));
    EXPECT_TRUE(imageExists("amdgpu-topology.img"));
    EXPECT_TRUE(fake().added.empty()) << "criu 3.x has no inventory";
}

TEST_F(MockDumpSession,
       GivenCheckpointFault_WhenCheckpointDevices_ThenNegativeErrnoOtherThanENOTSUP) {
    ASSERT_TRUE(mock::addFault(root_, "checkpoint", "1").ok());
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    int r = session_.checkpointDevices(getpid());
    EXPECT_LT(r, 0);
    EXPECT_NE(r, -ENOTSUP);
}

TEST_F(MockDumpSession, GivenCheckpointFault_WhenCheckpointDevices_ThenErrorLogNamesTheStep) {
    ASSERT_TRUE(mock::addFault(root_, "checkpoint", "1").ok());
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    session_.checkpointDevices(getpid());
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_NE(errors.find("amdgpu_plugin (mock backend, checkpoint)"), std::string::npos) << errors;
}

TEST_F(MockDumpSession, GivenCheckpointFault_WhenCheckpointDevices_ThenQueuesUnpausedAtOnce) {
    ASSERT_TRUE(mock::addFault(root_, "checkpoint", "1").ok());
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(paused());
    session_.checkpointDevices(getpid());
    EXPECT_FALSE(paused());
}

// ------------------------------------------------------------------ DUMP_FINISH (criu 4.3)

TEST_F(MockDumpSession, GivenCriu4_3_WhenDumpDevicesLate_ThenPausedUntilDumpFinish) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.dumpDevicesLate(getpid()), -ENOTSUP);
    EXPECT_TRUE(paused());
    EXPECT_EQ(session_.dumpFinish(0), 0);
    EXPECT_FALSE(paused());
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(MockDumpSession,
       GivenCriuWithDumpDevicesLateButNoDumpFinish_WhenDumpDevicesLate_ThenUnpaused) {
    frontend::CriuAbi dev = fakecriu::abi43();
    dev.maxHooks = 15;
    initDump(dev);
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.dumpDevicesLate(getpid()), -ENOTSUP) << "other plugins get the hook too";
    EXPECT_FALSE(paused());
}

TEST_F(MockDumpSession, GivenPausedProcess_WhenDumpFinishWithAnError_ThenUnpausedBeforeRelease) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(paused());
    EXPECT_EQ(session_.dumpFinish(-1), 0);
    EXPECT_FALSE(paused());
}

// criu 4.3 calls DUMP_FINISH a second time, with an error, when another plugin's DUMP_FINISH
// failed after a dump that would have ended the tasks: it resumes them instead.
TEST_F(MockDumpSession, GivenFinishedDump_WhenDumpFinishComesAgainWithAnError_ThenZeroAndSaysSo) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpFinish(0), 0);
    EXPECT_EQ(session_.dumpFinish(-5), 0);
    EXPECT_FALSE(paused());
    EXPECT_NE(fakecriu::logsAtOrAbove(3).find("failed the dump after it had finished"),
              std::string::npos)
        << fakecriu::logsAtOrAbove(4);
    session_.exit(frontend::kStageDump, -5);
    EXPECT_FALSE(paused());
}

// The dump's guardian (dump_guardian.h), started by the session in this process (playing criu).
class MockDumpGuardian : public MockDumpSession {
protected:
    std::string dir() const { return tmp_ / "guardians"; }
    /// The paused pids the record of this "criu" lists (none when there is no record).
    std::vector<int> recorded() const {
        auto records = coordination::readPausedRecords(dir());
        if (!records.ok() || records->empty())
            return {};
        return records->front().paused;
    }
    static bool within(std::chrono::milliseconds limit, const std::function<bool()>& done) {
        auto end = std::chrono::steady_clock::now() + limit;
        while (!done() && std::chrono::steady_clock::now() < end)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return done();
    }
    static bool gone(int pid) {
        std::string stat = testsupport::readFile("/proc/" + std::to_string(pid) + "/stat");
        size_t paren = stat.rfind(')');
        return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
    }
};

TEST_F(MockDumpGuardian, GivenAProcessWithoutGpu_WhenPaused_ThenNoGuardianStarts) {
    initDump(fakecriu::abi41(), dir());
    EXPECT_EQ(session_.pauseDevices(getppid()), -ENOTSUP);
    EXPECT_EQ(session_.guardian(), nullptr);
    EXPECT_NE(access(dir().c_str(), F_OK), 0) << "nothing written for a dump without GPU";
}

TEST_F(MockDumpGuardian, GivenAPausedProcess_ThenAGuardianWatchesUntilTheDumpEnds) {
    initDump(fakecriu::abi41(), dir());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_NE(session_.guardian(), nullptr) << fakecriu::logsAtOrAbove(4);
    int guardian = session_.guardian()->pid();
    EXPECT_TRUE(
        within(std::chrono::seconds(1), [&] { return recorded() == std::vector<int>{getpid()}; }));
    EXPECT_NE(fakecriu::logsAtOrAbove(3).find("guardian " + std::to_string(guardian)),
              std::string::npos);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    session_.exit(frontend::kStageDump, 0);
    EXPECT_EQ(session_.guardian(), nullptr);
    EXPECT_TRUE(within(std::chrono::seconds(2), [&] { return gone(guardian); }));
    EXPECT_TRUE(recorded().empty());
    EXPECT_NE(access(coordination::guardianLogPath(dir(), getpid()).c_str(), F_OK), 0)
        << "a dismissed guardian keeps no log";
}

TEST_F(MockDumpGuardian, GivenACheckpointThatFails_ThenTheGuardianForgetsTheUnpausedProcess) {
    initDump(fakecriu::abi41(), dir());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(within(std::chrono::seconds(1), [&] { return !recorded().empty(); }));
    ASSERT_TRUE(mock::addFault(root_, "checkpoint", "1").ok());
    EXPECT_NE(session_.checkpointDevices(getpid()), 0);
    EXPECT_FALSE(paused());
    EXPECT_TRUE(within(std::chrono::seconds(1), [&] { return recorded().empty(); }))
        << "the guardian still holds the process the failed checkpoint unpaused";
    ASSERT_NE(session_.guardian(), nullptr) << "it watches until the dump ends";
}

TEST_F(MockDumpGuardian, GivenAPauseInProgress_ThenTheGuardianAlreadyKnowsTheProcess) {
    initDump(fakecriu::abi41(), dir());
    // The pause stalls before it changes anything: criu could die there.
    ASSERT_TRUE(mock::addFault(root_, "pause", "1", mock::FaultKind::Stall).ok());
    int rc = -1;
    std::thread criu([&] { rc = session_.pauseDevices(getpid()); });
    std::string marker = mock::stallMarker(root_);
    bool stalled =
        within(std::chrono::seconds(5), [&] { return access(marker.c_str(), F_OK) == 0; });
    bool known = stalled && within(std::chrono::seconds(1),
                                   [&] { return recorded() == std::vector<int>{getpid()}; });
    unlink(marker.c_str());
    criu.join();
    EXPECT_TRUE(stalled) << "the pause never reached the driver";
    EXPECT_TRUE(known) << "the guardian did not know the process while it was being paused";
    EXPECT_EQ(rc, 0) << fakecriu::logsAtOrAbove(4);
}

// The fault sweep of issue 55 through the plugin's session, as criu drives it: every mock driver
// call of a dump fails once with each errno; criu's error log must name the call, the GPU and the
// step, and after criu's exit the process runs, its guardian is gone and its paused record too.
TEST_F(MockDumpGuardian, GivenEachDriverCallOfADumpFailingOnce_ThenNoGuardianOrPausedRecordIsLeft) {
    mocktest::MockFaultPlan faults(root_);
    faultsweep::SweepSpec spec;
    spec.title = "mock dump through the plugin's session";
    spec.errnosFor = [](const std::string&) { return faultsweep::commonErrnos(); };
    spec.gpuOrFile = {"GPU 0x", "mock context", "renderD", "file id"};
    spec.steps = {"pause", "checkpoint", "dump", "unpaus"};
    spec.run = [&](faultsweep::FaultPlan& plan) {
        faultsweep::SweepRun run;
        size_t fds = faultsweep::openFdsOfThisProcess();
        fake().logs.clear();
        faults.configure(plan);
        frontend::PluginSession session;
        frontend::PluginSession::Host h =
            host({{"CRIU_AMDGPU_MOCK_ROOT", root_},
                  {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                 fakecriu::abi41());
        h.guardianDir = dir();
        EXPECT_EQ(session.init(frontend::kStageDump, std::move(h)), 0);
        int rc = session.pauseDevices(getpid());
        int guardian = session.guardian() ? session.guardian()->pid() : 0;
        if (rc == 0)
            rc = session.checkpointDevices(getpid());
        if (rc == 0)
            rc = session.dumpExtFile(gpuFd_, 7);
        session.exit(frontend::kStageDump, rc == 0 ? 0 : -1);
        faults.collect(plan);
        if (rc != 0)
            run.result = base::makeErrnoError(base::ErrorCode::Kernel, -rc, "%s",
                                              fakecriu::logsAtOrAbove(1).c_str());
        if (paused())
            run.leftBehind.push_back("the process's context is paused");
        if (guardian > 0 && !within(std::chrono::seconds(2), [&] { return gone(guardian); }))
            run.leftBehind.push_back("guardian " + std::to_string(guardian) + " still runs");
        if (!recorded().empty())
            run.leftBehind.push_back("a paused record lists the process");
        if (access(coordination::guardianLogPath(dir(), getpid()).c_str(), F_OK) == 0)
            run.leftBehind.push_back("a guardian log");
        faultsweep::expectSame(run.leftBehind, "fds of this process", fds,
                               faultsweep::openFdsOfThisProcess());
        return run;
    };
    EXPECT_GT(faultsweep::runSweep(spec).runs, 0u);
}

} // namespace
