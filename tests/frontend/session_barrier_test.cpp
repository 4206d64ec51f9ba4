// The exception barrier at criu's C boundary: a backend that throws (loaded through the real
// registry, so its exceptions cross a library boundary as a real backend's would) never makes
// criu die in std::terminate. Every hook turns the exception into an error return, after the GPU
// work this dump paused is unpaused, a failed restore is undone at exit, and a task whose GPU
// work could not be resumed is stopped. Also UPDATE_VMA_MAP's return value, which criu reads.

#include "fake_criu.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace {

using fakecriu::fake;
using testsupport::writeFile;

class BarrierSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        if (geteuid() != 0)
            GTEST_SKIP() << "the device node is made with mknod, which needs root";
        control_ = tmp_ / "gpu";
        ASSERT_EQ(mkdir(control_.c_str(), 0700), 0);
        // A character device under the control folder (it behaves as /dev/null).
        std::string node = control_ + "/renderD128";
        ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
        gpuFd_ = open(node.c_str(), O_RDWR | O_CLOEXEC);
        ASSERT_GE(gpuFd_, 0);
    }
    void TearDown() override {
        session_.exit(stage_, -1);
        if (gpuFd_ >= 0)
            close(gpuFd_);
        SessionTest::TearDown();
    }

    /// Makes the backend throw at `step` from now on.
    void throwAt(const std::string& step) { writeFile(control_ + "/throw-at", step); }
    bool marker(const std::string& name) const {
        struct stat st;
        return stat((control_ + "/" + name).c_str(), &st) == 0;
    }
    std::string me() const { return std::to_string(getpid()); }

    void init(int stage, frontend::CriuAbi abi = fakecriu::abi41()) {
        stage_ = stage;
        ASSERT_EQ(
            session_.init(stage, host({{"CRIU_AMDGPU_MOCK_ROOT", control_},
                                       {"CRIU_AMDGPU_BACKEND", "throwing"},
                                       {"CRIU_AMDGPU_BACKEND_DIR", FRONTEND_THROWING_BACKEND_DIR}},
                                      std::move(abi))),
            0);
    }
    void initDump(frontend::CriuAbi abi = fakecriu::abi41()) {
        init(frontend::kStageDump, std::move(abi));
        ASSERT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
    }

    std::string control_;
    int gpuFd_ = -1;
    int stage_ = frontend::kStageDump;
    frontend::PluginSession session_;
};

// ------------------------------------------------------------------------------------- dump

TEST_F(BarrierSession, GivenThrowAtCheckpoint_WhenCheckpointDevices_ThenEIOAndUnpaused) {
    initDump();
    throwAt("checkpoint");
    ASSERT_EQ(session_.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_TRUE(marker("paused-" + me()));
    EXPECT_EQ(session_.checkpointDevices(getpid()), -EIO);
    EXPECT_TRUE(marker("unpaused-" + me())) << "the paused process was left paused";
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("internal error in checkpoint: thrown at checkpoint"),
              std::string::npos)
        << fakecriu::logsAtOrAbove(4);
}

// KFD takes CRIU ops only from the task or its ptrace parent, and criu calls PAUSE_DEVICES before
// it seizes the task (criu/seize.c): for such a backend the pause is made at CHECKPOINT_DEVICES.
TEST_F(BarrierSession,
       GivenABackendThatPausesOnlySeizedTasks_WhenPauseDevices_ThenPausedAtCheckpoint) {
    writeFile(control_ + "/seized-only", "");
    initDump();
    EXPECT_EQ(session_.pauseDevices(getpid()), -ENOTSUP) << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(marker("paused-" + me())) << "paused before criu seized the task";
    writeFile(control_ + "/seized-" + me(), ""); // criu seizes the task
    EXPECT_EQ(session_.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(marker("paused-" + me()));
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.dumpDevicesLate(0), -ENOTSUP);
    EXPECT_TRUE(marker("unpaused-" + me()));
}

TEST_F(BarrierSession,
       GivenAPauseAtCheckpointThatFails_WhenCheckpointDevices_ThenAnErrorAndNothingPaused) {
    writeFile(control_ + "/seized-only", "");
    initDump();
    EXPECT_EQ(session_.pauseDevices(getpid()), -ENOTSUP);
    // Not seized: the backend refuses as KFD would.
    EXPECT_LT(session_.checkpointDevices(getpid()), 0);
    EXPECT_FALSE(marker("paused-" + me()));
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("which this process has not seized"),
              std::string::npos)
        << fakecriu::logsAtOrAbove(4);
}

TEST_F(BarrierSession, GivenThrowOfANonStdException_WhenPauseDevices_ThenEIO) {
    initDump();
    throwAt("pause-int");
    EXPECT_EQ(session_.pauseDevices(getpid()), -EIO);
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("not a std::exception"), std::string::npos);
}

TEST_F(BarrierSession, GivenThrowWhileWritingImagesUnderCriu3_WhenDumpExtFile_ThenEIOAndUnpaused) {
    initDump(fakecriu::abi317());
    throwAt("dump-file");
    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), -EIO);
    EXPECT_TRUE(marker("paused-" + me()));
    EXPECT_TRUE(marker("unpaused-" + me()));
}

TEST_F(BarrierSession, GivenThrowAtUnpause_WhenDumpFinishAndExit_ThenErrorsOnly) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0);
    ASSERT_EQ(session_.checkpointDevices(getpid()), 0);
    throwAt("unpause");
    EXPECT_EQ(session_.dumpFinish(0), -EIO);
    session_.exit(frontend::kStageDump, 0); // must not throw
    EXPECT_FALSE(marker("unpaused-" + me()));
}

TEST_F(BarrierSession, GivenThrowWhileCreatingTheDevice_WhenInit_ThenZeroAndGpuFilesRefused) {
    throwAt("create");
    init(frontend::kStageDump);
    EXPECT_FALSE(session_.active());
    EXPECT_NE(session_.setupError(), "");
    int devNull = open("/dev/null", O_RDWR | O_CLOEXEC);
    ASSERT_GE(devNull, 0);
    EXPECT_EQ(session_.dumpExtFile(devNull, 3), -ENOTSUP) << "a file that is not an AMD GPU's";
    close(devNull);
    int r = session_.dumpExtFile(gpuFd_, 4);
    EXPECT_LT(r, 0);
    EXPECT_NE(r, -ENOTSUP);
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find(control_ + "/renderD128"), std::string::npos)
        << fakecriu::logsAtOrAbove(4);
}

// ------------------------------------------------------------------- DUMP_FINISH's answer

TEST_F(BarrierSession, GivenUnpauseFailsAndTasksAreKilled_WhenDumpFinishZero_ThenZero) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0);
    throwAt("fail-unpause");
    fake().finalState = frontend::kTaskDead;
    EXPECT_EQ(session_.dumpFinish(0), 0) << "the dump succeeded and the tasks end: keep it";
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("unpausing process"), std::string::npos);
}

TEST_F(BarrierSession, GivenUnpauseFailsAndTasksKeepRunning_WhenDumpFinishZero_ThenAnError) {
    initDump(fakecriu::abi43());
    ASSERT_EQ(session_.pauseDevices(getpid()), 0);
    throwAt("fail-unpause");
    fake().finalState = frontend::kTaskAlive; // --leave-running
    int r = session_.dumpFinish(0);
    EXPECT_LT(r, 0);
    EXPECT_NE(r, -ENOTSUP);
}

// ---------------------------------------------------------------------------------- restore

TEST_F(BarrierSession, GivenThrowAtRestoreFile_WhenRestoreExtFile_ThenEIOAndExitUndoesIt) {
    init(frontend::kStageRestore);
    ASSERT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
    throwAt("restore-file");
    EXPECT_EQ(session_.restoreExtFile(5), -EIO);
    session_.exit(frontend::kStageRestore, 0);
    EXPECT_TRUE(marker("aborted")) << "criu reported success, but the restore had failed";
}

// RESTORE_EXT_FILE runs in the restored task while criu places its fds at their old numbers,
// and criu refuses a number that is taken ("fd 3 already in use"): real criu 4.3 failed so on
// the user-space KFD driver, the kfd backend having kept a render node of the target GPU (and
// its driver connection) at the task's lowest free numbers. Whatever the backend opens during
// the hook lands at criu's find_unused_fd_pid or above; the numbers below are free again after.
TEST_F(BarrierSession, GivenCriusFirstUnusedFd_WhenRestoreExtFile_ThenTheBackendsFdsGoAboveIt) {
    init(frontend::kStageRestore);
    ASSERT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
    int lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(lowest, 0);
    close(lowest);
    fake().unusedFd = lowest + 8; // the task's fds reach lowest + 7
    int fd = session_.restoreExtFile(5);
    EXPECT_GE(fd, lowest + 8) << "the backend's fd took a number the task's own fd needs";
    EXPECT_EQ(fake().unusedFdAskedFor, std::vector<int>{getpid()});
    int next = open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(next, lowest) << "the numbers held during the hook were not given back";
    for (int f : {fd, next})
        if (f >= 0)
            close(f);
}

// criu 4.3's RESTORE_EXT_FILE takes retry_needed: a file the backend cannot restore before others
// of the task (a dma-buf fd below its render node's) is answered 0 with retry_needed set, and
// restored when criu asks again; a criu without retry_needed gets the restore at once.
TEST_F(BarrierSession, GivenAFileTheBackendPutsOff_WhenRestoreExtFile_ThenCriuIsAskedToRetry) {
    init(frontend::kStageRestore);
    ASSERT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
    writeFile(control_ + "/restore-later-5", "");
    bool retry = false;
    EXPECT_EQ(0, session_.restoreExtFile(5, &retry));
    EXPECT_TRUE(retry) << "criu was not asked to retry";
    retry = false;
    int fd = session_.restoreExtFile(5, &retry);
    EXPECT_GE(fd, 0) << "the retried restore gave no fd";
    EXPECT_FALSE(retry);
    if (fd >= 0)
        close(fd);
    writeFile(control_ + "/restore-later-6", "");
    fd = session_.restoreExtFile(6); // no retry_needed: no putting off
    EXPECT_GE(fd, 0);
    if (fd >= 0)
        close(fd);
}

TEST_F(BarrierSession, GivenThrowAtResume_WhenResumeDevicesLate_ThenEIOAndTheTaskIsStopped) {
    init(frontend::kStageRestore);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    throwAt("resume");
    EXPECT_EQ(session_.resumeDevicesLate(child), -EIO);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "a restored task whose GPU work is not resumed would hang";
}

TEST_F(BarrierSession, GivenThrowAtUpdateVma_WhenUpdateVmaMap_ThenEIOAndOutputsUntouched) {
    init(frontend::kStageRestore);
    throwAt("update-vma");
    uint64_t newPgoff = 7;
    int pluginFd = 8;
    EXPECT_EQ(session_.updateVmaMap((control_ + "/renderD128").c_str(), 0x1000, 0x10, &newPgoff,
                                    &pluginFd),
              -EIO);
    EXPECT_EQ(newPgoff, 7u);
    EXPECT_EQ(pluginFd, 8);
}

// criu applies UPDATE_VMA_MAP's new_pgoff only when the hook returns 1 (criu/files-reg.c: "if
// (ret == 1) ... vma->e->pgoff = new_pgoff"; the fd it returns is used whatever the answer). A
// plugin answering 0 would have the restored BOs mapped at their old offsets.
TEST_F(BarrierSession, GivenMappingOfOurs_WhenUpdateVmaMap_ThenOneAndTheNewOffset) {
    init(frontend::kStageRestore);
    uint64_t newPgoff = 0;
    int pluginFd = 8;
    EXPECT_EQ(session_.updateVmaMap((control_ + "/renderD128").c_str(), 0x1000, 0x10, &newPgoff,
                                    &pluginFd),
              1);
    EXPECT_EQ(newPgoff, 0x110u);
    EXPECT_EQ(pluginFd, -1);
}

TEST_F(BarrierSession, GivenMappingNotOurs_WhenUpdateVmaMap_ThenENOTSUPAndOutputsUntouched) {
    init(frontend::kStageRestore);
    uint64_t newPgoff = 7;
    int pluginFd = 8;
    EXPECT_EQ(session_.updateVmaMap("/dev/dri/renderD129", 0x1000, 0x10, &newPgoff, &pluginFd),
              -ENOTSUP);
    EXPECT_EQ(newPgoff, 7u);
    EXPECT_EQ(pluginFd, 8);
}

} // namespace
