// A plugin that cannot set itself up (a bad option of its own, a mock root that holds no machine)
// never fails criu's init: processes without AMD GPUs dump and restore as if the plugin were not
// there, and a checkpoint that involves an AMD GPU fails with an error naming the option. criu
// 4.3's plugin options arrive as an argv whose first entry is a program name and which holds
// every plugin's options; only the amdgpu ones count.

#include "fake_criu.h"

#include "mockgpu/client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <gmock/gmock.h>

namespace {

using fakecriu::fake;

class SetupErrorSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        openPlainFiles();
    }
    void TearDown() override {
        session_.exit(frontend::kStageDump, -1);
        if (gpuFd_ >= 0)
            close(gpuFd_);
        SessionTest::TearDown();
    }

    /// A mock machine with one GPU at tmp_/machine and an fd of its device in gpuFd_.
    std::string openMockGpu() {
        std::string root = makeMockMachine();
        auto fd = mock::openDevice(root, 0);
        EXPECT_TRUE(fd.ok()) << fd.error().describe();
        gpuFd_ = fd.ok() ? fd.value() : -1;
        return root;
    }

    /// Starts the session with a mock root that holds no machine (and the real backends);
    /// returns that root.
    std::string initWithEmptyMockRoot(frontend::CriuAbi abi) {
        std::string empty = tmp_ / "not-a-machine";
        EXPECT_EQ(mkdir(empty.c_str(), 0700), 0);
        EXPECT_EQ(session_.init(frontend::kStageDump,
                                host({{"CRIU_AMDGPU_MOCK_ROOT", empty},
                                      {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                                     std::move(abi))),
                  0);
        return empty;
    }

    /// Every hook on plain files answers -ENOTSUP, and nothing is logged above a warning.
    void expectPlainFilesUntouched() {
        struct stat st;
        for (int fd : {devNull_, regular_}) {
            EXPECT_EQ(session_.dumpExtFile(fd, 3), -ENOTSUP) << "fd " << fd;
            ASSERT_EQ(fstat(fd, &st), 0);
            EXPECT_EQ(session_.handleDeviceVma(fd, &st), -ENOTSUP) << "fd " << fd;
        }
        EXPECT_EQ(session_.pauseDevices(getpid()), -ENOTSUP);
        EXPECT_EQ(session_.checkpointDevices(getpid()), -ENOTSUP);
        EXPECT_EQ(session_.dumpFinish(0), -ENOTSUP);
        EXPECT_EQ(fakecriu::logsAtOrAbove(1), "");
    }

    int gpuFd_ = -1;
    frontend::PluginSession session_;
};

TEST_F(SetupErrorSession, GivenBadValueOfOurOption_WhenInitDump_ThenZeroAndWarningNamesIt) {
    EXPECT_EQ(session_.init(frontend::kStageDump,
                            host({{"CRIU_AMDGPU_NUMA_CHECK", "maybe"}}, fakecriu::abi41())),
              0);
    EXPECT_FALSE(session_.active());
    std::string warnings = fakecriu::logsAtOrAbove(2);
    EXPECT_NE(warnings.find("CRIU_AMDGPU_NUMA_CHECK"), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("others are not affected"), std::string::npos) << warnings;
}

// In criu's log, criu's own warnings and errors carry a tag ("Warn (criu/...): "); the plugin's
// lines of those levels carry "Warn (amdgpu): " and "Error (amdgpu): ", so that users and tests
// can find them.
TEST_F(SetupErrorSession, GivenBadValueOfOurOption_WhenInitDump_ThenTheWarningIsTaggedForCriusLog) {
    ASSERT_EQ(session_.init(frontend::kStageDump,
                            host({{"CRIU_AMDGPU_NUMA_CHECK", "maybe"}}, fakecriu::abi41())),
              0);
    bool tagged = false;
    for (const fakecriu::LogRecord& r : fake().logs)
        if (r.level == 2)
            tagged =
                tagged || r.text.rfind("Warn (amdgpu): amdgpu_plugin: configuration error", 0) == 0;
    EXPECT_TRUE(tagged) << fakecriu::logsAtOrAbove(4);
}

TEST_F(SetupErrorSession, GivenBadValueOfOurOption_WhenPlainFilesAreDumped_ThenENOTSUP) {
    ASSERT_EQ(session_.init(frontend::kStageDump,
                            host({{"CRIU_AMDGPU_NUMA_CHECK", "maybe"}}, fakecriu::abi43())),
              0);
    expectPlainFilesUntouched();
}

TEST_F(SetupErrorSession, GivenUnknownOptionName_WhenInitDump_ThenZeroAndWarningNamesIt) {
    EXPECT_EQ(session_.init(frontend::kStageDump,
                            host({{"CRIU_AMDGPU_NO_SUCH_OPTION", "1"}}, fakecriu::abi41())),
              0);
    EXPECT_NE(fakecriu::logsAtOrAbove(2).find("CRIU_AMDGPU_NO_SUCH_OPTION"), std::string::npos)
        << fakecriu::logsAtOrAbove(4);
}

TEST_F(SetupErrorSession, GivenBadOptionAndAMockGpuFile_WhenDumpExtFile_ThenErrorNamesBoth) {
    if (geteuid() != 0)
        GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
    std::string root = openMockGpu();
    ASSERT_GE(gpuFd_, 0);
    ASSERT_EQ(session_.init(frontend::kStageDump, host({{"CRIU_AMDGPU_MOCK_ROOT", root},
                                                        {"CRIU_AMDGPU_NUMA_CHECK", "maybe"}},
                                                       fakecriu::abi41())),
              0);
    int r = session_.dumpExtFile(gpuFd_, 7);
    EXPECT_EQ(r, -EINVAL);
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_NE(errors.find("CRIU_AMDGPU_NUMA_CHECK"), std::string::npos) << errors;
    EXPECT_NE(errors.find("a mock GPU device under"), std::string::npos) << errors;
    EXPECT_FALSE(imageExists("amdgpu-renderD-7.img"));
}

// Issue 34, item 5: a backend directory others may write loads nothing and is the plugin's setup
// error, not criu's: plain files dump as before, a GPU file's dump fails naming the option, the
// path and why.
TEST_F(SetupErrorSession, GivenAWorldWritableBackendDir_WhenDumped_ThenOnlyTheGpuFileIsRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
    std::string root = openMockGpu();
    ASSERT_GE(gpuFd_, 0);
    std::string open = tmp_ / "open-backends";
    ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
    std::filesystem::copy_file(std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/mock.so",
                               open + "/mock.so");
    ASSERT_EQ(chmod(open.c_str(), 0777), 0);
    ASSERT_EQ(session_.init(frontend::kStageDump, host({{"CRIU_AMDGPU_MOCK_ROOT", root},
                                                        {"CRIU_AMDGPU_BACKEND_DIR", open}},
                                                       fakecriu::abi43())),
              0);
    EXPECT_THAT(fakecriu::logsAtOrAbove(2),
                testing::HasSubstr("backend-dir '" + open + "' is writable by group or others"));
    expectPlainFilesUntouched();

    EXPECT_EQ(session_.dumpExtFile(gpuFd_, 7), -EINVAL);
    EXPECT_THAT(fakecriu::logsAtOrAbove(1),
                testing::HasSubstr("backend-dir '" + open + "' is writable by group or others"));
    EXPECT_FALSE(imageExists("amdgpu-renderD-7.img"));
}

TEST_F(SetupErrorSession, GivenMockRootWithoutAMachine_WhenInitDump_ThenZeroAndWarningNamesIt) {
    std::string empty = initWithEmptyMockRoot(fakecriu::abi41());
    EXPECT_FALSE(session_.active());
    std::string warnings = fakecriu::logsAtOrAbove(2);
    EXPECT_NE(warnings.find("mock-root = " + empty + " (env CRIU_AMDGPU_MOCK_ROOT)"),
              std::string::npos)
        << warnings;
}

TEST_F(SetupErrorSession, GivenMockRootWithoutAMachine_WhenPlainFilesAreDumped_ThenENOTSUP) {
    initWithEmptyMockRoot(fakecriu::abi43());
    expectPlainFilesUntouched();
}

TEST_F(SetupErrorSession, GivenMockRootWithoutAMachine_WhenADeviceUnderItIsMapped_ThenRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "the device node is made with mknod, which needs root";
    std::string empty = initWithEmptyMockRoot(fakecriu::abi41());
    std::string node = empty + "/renderD128";
    ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
    gpuFd_ = open(node.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(gpuFd_, 0);
    struct stat st;
    ASSERT_EQ(fstat(gpuFd_, &st), 0);
    EXPECT_EQ(session_.handleDeviceVma(gpuFd_, &st), -EINVAL);
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_NE(errors.find("env CRIU_AMDGPU_MOCK_ROOT"), std::string::npos) << errors;
    EXPECT_NE(errors.find(node), std::string::npos) << errors;
}

TEST_F(SetupErrorSession, GivenBadOption_WhenRestoringAFileWithOurImage_ThenErrorNamesIt) {
    ASSERT_EQ(session_.init(frontend::kStageRestore,
                            host({{"CRIU_AMDGPU_NUMA_CHECK", "maybe"}}, fakecriu::abi41())),
              0);
    EXPECT_EQ(fake().checked, std::vector<std::string>{"amdgpu_plugin"})
        << "criu fails a restore whose inventory entry no plugin took";
    testsupport::writeFile(imageDir_ + "/amdgpu-renderD-9.img", "x");
    EXPECT_EQ(session_.restoreExtFile(9), -EINVAL);
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("CRIU_AMDGPU_NUMA_CHECK"), std::string::npos)
        << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.restoreExtFile(10), -ENOTSUP);
}

// ---------------------------------------------------------------- criu 4.3's plugin options

TEST_F(SetupErrorSession, GivenCriu4_3ArgvWithOtherPluginsOptions_WhenInit_ThenNoComplaint) {
    fake().pluginArgv = {"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=0",
                         "--cuda_plugin.backend=auto"};
    EXPECT_EQ(
        session_.init(frontend::kStageDump,
                      host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi43())),
        0);
    EXPECT_EQ(session_.setupError(), "");
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(SetupErrorSession, GivenCriu4_3ArgvWithABadAmdgpuOption_WhenInit_ThenSetupErrorNamesIt) {
    fake().pluginArgv = {"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=maybe"};
    EXPECT_EQ(session_.init(frontend::kStageDump, host({}, fakecriu::abi43())), 0);
    EXPECT_NE(session_.setupError().find("plugin option amdgpu.numa-check"), std::string::npos)
        << session_.setupError();
    expectPlainFilesUntouched();
}

TEST_F(SetupErrorSession, GivenMockRootAsACriu4_3PluginOption_WhenInit_ThenTheMockBackendServes) {
    if (geteuid() != 0)
        GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
    std::string root = openMockGpu();
    fake().pluginArgv = {"criu-plugin", "--amdgpu.mock-root=" + root,
                         "--amdgpu.backend-dir=" CRIU_AMDGPU_BUILD_BACKEND_DIR};
    ASSERT_EQ(session_.init(frontend::kStageDump, host({}, fakecriu::abi43())), 0);
    EXPECT_TRUE(session_.active()) << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(session_.backendName(), "mock");
}

} // namespace
