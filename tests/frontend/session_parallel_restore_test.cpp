// PluginSession with parallel-restore: at init (criu's main process) the channel goes into criu's
// fdstore; RESTORE_EXT_FILE (in a task) hands the BOs over; POST_FORKING starts the worker; the
// first RESUME_DEVICES_LATE waits for it and checks it before anything resumes. Where criu has no
// POST_FORKING or no fdstore, the plugin says why and restores in the task. The mock backend does
// the work; this process plays criu's main process and the task.

#include "fake_criu.h"

#include "mockgpu/client.h"
#include "mockgpu/context.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include <gmock/gmock.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace {

using fakecriu::fake;
using ::testing::HasSubstr;

constexpr int kFileId = 7;
constexpr uint64_t kBoSize = 300 * 1024;

class ParallelRestoreSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        if (geteuid() != 0)
            GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
        root_ = makeMockMachine();
        dumpOneDevice();
    }

    void TearDown() override {
        restore_.exit(frontend::kStageRestore, 0);
        for (int fd : fds_)
            close(fd);
        if (child_ > 0) {
            kill(child_, SIGKILL);
            waitpid(child_, nullptr, 0);
        }
        SessionTest::TearDown();
    }

    std::map<std::string, std::string> env(bool parallel) const {
        std::map<std::string, std::string> e = {
            {"CRIU_AMDGPU_MOCK_ROOT", root_},
            {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR},
            {"CRIU_AMDGPU_MAX_BUFFER_SIZE", "64K"}};
        if (parallel)
            e["CRIU_AMDGPU_PARALLEL_RESTORE"] = "1";
        return e;
    }

    /// Dumps this process's device (one BO of a known pattern) and resets the machine.
    void dumpOneDevice() {
        for (size_t i = 0; i < kBoSize; ++i)
            pattern_.push_back(static_cast<std::byte>(i * 7 + (i >> 10)));
        int fd = -1;
        uint32_t bo = 0;
        openMockGpuWithBo(root_, pattern_, &fd, &bo);
        if (HasFatalFailure())
            return;
        frontend::PluginSession dump;
        ASSERT_EQ(dump.init(frontend::kStageDump, host(env(false), fakecriu::abi43())), 0);
        ASSERT_EQ(dump.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.dumpExtFile(fd, kFileId), 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.dumpFinish(0), 0);
        dump.exit(frontend::kStageDump, 0);
        close(fd);
        ASSERT_TRUE(mock::resetMachine(root_).ok());
        fake().logs.clear();
    }

    /// The restored BO's bytes, read by the driver (the context stays paused until resumed).
    std::vector<std::byte> restoredBytes(int fd) {
        auto state = mock::queryContext(fd);
        EXPECT_TRUE(state.ok());
        auto contexts = mock::listContexts(root_);
        EXPECT_TRUE(contexts.ok() && contexts->size() == 1);
        std::vector<std::byte> bytes(kBoSize);
        if (state.ok() && contexts.ok() && contexts->size() == 1) {
            EXPECT_TRUE(contexts->front().readBo(state->bos.at(0).handle, 0, bytes).ok());
        }
        return bytes;
    }

    /// A process standing for a restored task that criu would resume.
    pid_t startTask() {
        child_ = fork();
        if (child_ == 0) {
            pause();
            _exit(0);
        }
        return child_;
    }

    std::string root_;
    std::vector<std::byte> pattern_;
    std::vector<int> fds_;
    pid_t child_ = -1;
    frontend::PluginSession restore_;
};

TEST_F(ParallelRestoreSession, GivenCriu43_WhenRestored_ThenTheWorkerFillsTheBoBeforeTheResume) {
    ASSERT_EQ(restore_.init(frontend::kStageRestore, host(env(true), fakecriu::abi43())), 0);
    ASSERT_EQ(fake().fdstore.size(), 1u) << "the channel is in criu's fdstore";
    EXPECT_THAT(fakecriu::logsAtOrAbove(3),
                HasSubstr("parallel restore: the restored tasks hand BO contents to criu's main "
                          "process"));
    EXPECT_EQ(restore_.restoreInit(), -ENOTSUP);
    int fd = restore_.restoreExtFile(kFileId); // in the task
    ASSERT_GE(fd, 0) << fakecriu::logsAtOrAbove(4);
    fds_.push_back(fd);
    EXPECT_EQ(restoredBytes(fd), std::vector<std::byte>(kBoSize)) << "the task copied the BO";
    EXPECT_THAT(fakecriu::logsAtOrAbove(3), HasSubstr("handed to criu's main process"));

    EXPECT_EQ(restore_.postForking(), -ENOTSUP); // in criu's main process
    EXPECT_EQ(restore_.resumeDevicesLate(getpid()), 0) << fakecriu::logsAtOrAbove(2);

    EXPECT_EQ(restoredBytes(fd), pattern_);
    EXPECT_THAT(fakecriu::logsAtOrAbove(3), HasSubstr("parallel restore: 1 job(s) done"));
    EXPECT_THAT(fakecriu::logsAtOrAbove(3), HasSubstr("BO contents restored: 307200 bytes in"));
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(ParallelRestoreSession,
       GivenAFailingCopyInTheWorker_WhenResumed_ThenTheTaskIsStoppedAndTheRestoreUndone) {
    ASSERT_EQ(restore_.init(frontend::kStageRestore, host(env(true), fakecriu::abi43())), 0);
    int fd = restore_.restoreExtFile(kFileId);
    ASSERT_GE(fd, 0) << fakecriu::logsAtOrAbove(4);
    fds_.push_back(fd);
    ASSERT_TRUE(mock::addFault(root_, "write-bo", "1").ok());
    pid_t task = startTask();
    ASSERT_EQ(restore_.postForking(), -ENOTSUP);

    EXPECT_EQ(restore_.resumeDevicesLate(task), -EIO);

    int status = 0;
    ASSERT_EQ(waitpid(task, &status, 0), task);
    child_ = -1;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the task was not stopped";
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_THAT(errors, HasSubstr("parallel restore"));
    EXPECT_THAT(errors, HasSubstr("injected fault in write-bo"));
    EXPECT_THAT(errors, ::testing::ContainsRegex("of BO [0-9]+ \\(307200 bytes\\) of GPU 0x1000"));
    pid_t second = startTask();
    EXPECT_EQ(restore_.resumeDevicesLate(second), -EIO) << "a second task resumes after a failure";
    ASSERT_EQ(waitpid(second, &status, 0), second);
    child_ = -1;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the second task runs";
    ASSERT_TRUE(mock::clearFaults(root_).ok());
    restore_.exit(frontend::kStageRestore, 0);
    auto status2 = mock::describeMachine(root_);
    ASSERT_TRUE(status2.ok());
    EXPECT_THAT(*status2, HasSubstr("no open devices")) << "the failed restore left a context";
}

TEST_F(ParallelRestoreSession,
       GivenCriu41WithoutPostForking_WhenInit_ThenItSaysWhyAndRestoresInTheTask) {
    ASSERT_EQ(restore_.init(frontend::kStageRestore, host(env(true), fakecriu::abi41())), 0);
    EXPECT_THAT(fakecriu::logsAtOrAbove(3),
                HasSubstr("parallel-restore needs criu's POST_FORKING hook (criu 4.2 or newer)"));
    EXPECT_TRUE(fake().fdstore.empty());
    int fd = restore_.restoreExtFile(kFileId);
    ASSERT_GE(fd, 0) << fakecriu::logsAtOrAbove(4);
    fds_.push_back(fd);
    EXPECT_EQ(restoredBytes(fd), pattern_);
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(ParallelRestoreSession,
       GivenACriuWithoutFdstore_WhenInit_ThenItSaysWhyAndRestoresInTheTask) {
    auto h = host(env(true), fakecriu::abi43());
    h.services.fdstoreAdd = nullptr;
    ASSERT_EQ(restore_.init(frontend::kStageRestore, std::move(h)), 0);
    EXPECT_THAT(fakecriu::logsAtOrAbove(3), HasSubstr("does not export"));
    int fd = restore_.restoreExtFile(kFileId);
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    EXPECT_EQ(restoredBytes(fd), pattern_);
}

TEST_F(ParallelRestoreSession,
       GivenCriuFailsBeforeAnyResume_WhenExit_ThenTheWorkerEndsAndTheRestoreIsUndone) {
    ASSERT_EQ(restore_.init(frontend::kStageRestore, host(env(true), fakecriu::abi43())), 0);
    int fd = restore_.restoreExtFile(kFileId);
    ASSERT_GE(fd, 0);
    fds_.push_back(fd);
    ASSERT_EQ(restore_.postForking(), -ENOTSUP);

    restore_.exit(frontend::kStageRestore, -1);

    auto status = mock::describeMachine(root_);
    ASSERT_TRUE(status.ok());
    EXPECT_THAT(*status, HasSubstr("no open devices"));
}

} // namespace
