// PluginSession dumping a process (this one) that has a mock GPU open, with the real mock backend
// loaded from the build's backend directory: the criu 4.x order pause -> checkpoint -> dump file
// -> exit, the criu 3.x order (dump file alone), and a fault injected into the checkpoint.

#include "fake_criu.h"

#include "client.h"
#include "faults.h"
#include "machine.h"

#include "formats/topology_codec.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
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
    void initDump(frontend::CriuAbi abi = fakecriu::abi41()) {
        int r = session_.init(frontend::kStageDump,
                              host({{"CRIU_AMDGPU_MOCK_ROOT", root_},
                                    {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                                   std::move(abi)));
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
TEST_F(MockDumpSession, GivenPausedProcess_WhenCheckpointDevices_ThenZeroAndTheTopologyWaitsForTheFirstFile) {
    initDump();
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(imageExists(hal::kTopologyImageName));
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(imageExists(hal::kTopologyImageName));
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

} // namespace
