// PluginSession on a machine without any backend: a dump is not an error, every hook answers
// -ENOTSUP (so other plugins get their turn), and criu's log gets debug lines only.

#include "fake_criu.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace {

using fakecriu::fake;

class InertDumpSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        initResult_ = session_.init(
            frontend::kStageDump,
            host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi41()));
        openPlainFiles();
    }
    void TearDown() override {
        session_.exit(frontend::kStageDump, 0);
        SessionTest::TearDown();
    }

    /// fds of every kind: a character device, a regular file, closed and invalid numbers.
    std::vector<int> anyFds() const { return {devNull_, regular_, 999, -1}; }
    /// pids: this process, init, and invalid ones.
    static std::vector<int> anyPids() { return {static_cast<int>(getpid()), 1, 0, -1}; }

    frontend::PluginSession session_;
    int initResult_ = -2;
};

TEST_F(InertDumpSession, GivenNoBackend_WhenInitDump_ThenZeroAndInactive) {
    EXPECT_EQ(initResult_, 0) << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(session_.active());
    EXPECT_EQ(session_.backendName(), "");
}

TEST_F(InertDumpSession, GivenNoBackend_WhenInitDump_ThenOnlyDebugLinesLogged) {
    ASSERT_FALSE(fake().logs.empty()) << "criu's log sink was not installed";
    for (const fakecriu::LogRecord& r : fake().logs)
        EXPECT_EQ(r.level, 4u) << r.text;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenEveryHookAndExitRun_ThenNothingLoggedAboveDebug) {
    struct stat st = {};
    uint64_t newPgoff = 0;
    int pluginFd = -1;
    for (int fd : anyFds()) {
        session_.dumpExtFile(fd, 1);
        session_.handleDeviceVma(fd, &st);
    }
    for (int pid : anyPids()) {
        session_.pauseDevices(pid);
        session_.checkpointDevices(pid);
        session_.resumeDevicesLate(pid);
        session_.dumpDevicesLate(pid);
    }
    session_.restoreExtFile(1);
    session_.updateVmaMap("/dev/dri/renderD128", 0x1000, 0, &newPgoff, &pluginFd);
    session_.postForking();
    session_.restoreInit();
    session_.exit(frontend::kStageDump, 0);
    EXPECT_EQ(fakecriu::logsAtOrAbove(3), "");
}

TEST_F(InertDumpSession, GivenNoBackend_WhenDumpExtFile_ThenENOTSUPForAnyFdAndId) {
    for (int fd : anyFds())
        for (int id : {0, 7, 4096})
            EXPECT_EQ(session_.dumpExtFile(fd, id), -ENOTSUP) << "fd " << fd << " id " << id;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenRestoreExtFile_ThenENOTSUPForAnyId) {
    for (int id : {0, 7, 4096, -1})
        EXPECT_EQ(session_.restoreExtFile(id), -ENOTSUP) << "id " << id;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenHandleDeviceVma_ThenENOTSUPForAnyFd) {
    for (int fd : anyFds()) {
        struct stat st = {};
        fstat(fd, &st);
        EXPECT_EQ(session_.handleDeviceVma(fd, &st), -ENOTSUP) << "fd " << fd;
        EXPECT_EQ(session_.handleDeviceVma(fd, nullptr), -ENOTSUP) << "fd " << fd;
    }
}

TEST_F(InertDumpSession, GivenNoBackend_WhenUpdateVmaMap_ThenENOTSUPAndOutputsUntouched) {
    for (const char* path : {"/dev/dri/renderD128", "/dev/kfd", "/dev/null"}) {
        uint64_t newPgoff = 77;
        int pluginFd = 88;
        EXPECT_EQ(session_.updateVmaMap(path, 0x7f0000000000, 0x1000, &newPgoff, &pluginFd),
                  -ENOTSUP)
            << path;
        EXPECT_EQ(newPgoff, 77u);
        EXPECT_EQ(pluginFd, 88);
    }
}

TEST_F(InertDumpSession, GivenNoBackend_WhenPauseDevices_ThenENOTSUPForAnyPid) {
    for (int pid : anyPids())
        EXPECT_EQ(session_.pauseDevices(pid), -ENOTSUP) << "pid " << pid;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenCheckpointDevices_ThenENOTSUPForAnyPid) {
    for (int pid : anyPids())
        EXPECT_EQ(session_.checkpointDevices(pid), -ENOTSUP) << "pid " << pid;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenResumeDevicesLate_ThenENOTSUPForAnyPid) {
    for (int pid : anyPids())
        EXPECT_EQ(session_.resumeDevicesLate(pid), -ENOTSUP) << "pid " << pid;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenDumpDevicesLate_ThenENOTSUPForAnyId) {
    for (int id : anyPids())
        EXPECT_EQ(session_.dumpDevicesLate(id), -ENOTSUP) << "id " << id;
}

TEST_F(InertDumpSession, GivenNoBackend_WhenPostForking_ThenENOTSUP) {
    EXPECT_EQ(session_.postForking(), -ENOTSUP);
}

TEST_F(InertDumpSession, GivenNoBackend_WhenRestoreInit_ThenENOTSUP) {
    EXPECT_EQ(session_.restoreInit(), -ENOTSUP);
}

TEST_F(InertDumpSession, GivenNoBackend_WhenHooksRun_ThenNotRegisteredInInventory) {
    for (int pid : anyPids())
        session_.pauseDevices(pid);
    for (int fd : anyFds())
        session_.dumpExtFile(fd, 3);
    EXPECT_TRUE(fake().added.empty());
}

class PreDumpSession : public fakecriu::SessionTest {};

TEST_F(PreDumpSession, GivenPreDumpStage_WhenInit_ThenZeroAndInertWithoutLookingForBackends) {
    frontend::PluginSession session;
    EXPECT_EQ(
        session.init(frontend::kStagePreDump,
                     host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi41())),
        0);
    EXPECT_FALSE(session.active());
    EXPECT_EQ(session.pauseDevices(getpid()), -ENOTSUP);
    EXPECT_EQ(fakecriu::logsAtOrAbove(3), "");
}

// Loading the backends is most of what the plugin costs a dump where there is no GPU: without a
// GPU driver in the kernel (/proc/devices), and with nothing asked for, none is loaded.
class DriverlessMachine : public fakecriu::SessionTest {};

TEST_F(DriverlessMachine, GivenNoGpuDriverAndNothingAskedFor_WhenInitDump_ThenNoBackendIsLoaded) {
    frontend::PluginSession session;
    ASSERT_EQ(session.init(frontend::kStageDump,
                           host({{"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                                fakecriu::abi41())),
              0);
    EXPECT_FALSE(session.active());
    std::string logs = fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(logs.find("mock.so"), std::string::npos) << logs;
    EXPECT_NE(logs.find("no GPU driver is loaded"), std::string::npos) << logs;
    session.exit(frontend::kStageDump, 0);
}

TEST_F(DriverlessMachine, GivenADrmDriver_WhenInitDump_ThenTheBackendsAreProbed) {
    setProcDevices("Character devices:\n  1 mem\n226 drm\n");
    frontend::PluginSession session;
    ASSERT_EQ(session.init(frontend::kStageDump,
                           host({{"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                                fakecriu::abi41())),
              0);
    EXPECT_NE(fakecriu::logsAtOrAbove(4).find("mock.so"), std::string::npos)
        << fakecriu::logsAtOrAbove(4);
    session.exit(frontend::kStageDump, 0);
}

} // namespace
