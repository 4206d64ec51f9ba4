// criu-amdgpu mock, run as a process: init, status, fault, reset, and the state a finished
// workload leaves behind.
#include "run_tool.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;
using testing::Not;
using tooltest::RunResult;
using tooltest::runTool;

constexpr const char* kWorkload = CRIU_AMDGPU_BINARY_DIR "/bin/mockgpu-workload";
const char* const kOperations[] = {"alloc",        "submit",  "pause",   "checkpoint", "read-bo",
                                   "write-images", "unpause", "restore", "write-bo",   "resume"};

// The lines "GPU 0x....  node N  renderDM ..." of a machine description.
size_t gpuLines(const std::string& text) {
    static const std::regex gpu(
        R"(GPU 0x[0-9a-f]{4}  node \d+  renderD\d+  budget \d+ bytes  in use \d+)");
    size_t n = 0;
    for (const std::string& line : tooltest::lines(text))
        n += std::regex_match(line, gpu);
    return n;
}

class ToolMock : public ::testing::Test {
protected:
    void SetUp() override {
        if (!CRIU_AMDGPU_TOOLS_TEST_MOCK)
            GTEST_SKIP() << "the mock backend is not built";
        RunResult generate = runTool({"topology", "generate", "--out", topology_, "--gpus", "2"});
        ASSERT_EQ(generate.exitCode, 0) << generate.describe();
    }
    RunResult init() { return runTool({"mock", "init", "--root", root_, "--topology", topology_}); }
    void initOrFail() {
        RunResult r = init();
        ASSERT_EQ(r.exitCode, 0) << r.describe();
    }
    RunResult status() { return runTool({"mock", "status", "--root", root_}); }

    testsupport::TempDir dir_;
    std::string topology_ = dir_ / "topology";
    std::string root_ = dir_ / "mockgpu";
};

TEST_F(ToolMock, GivenNoTopology_WhenMockInit_ThenExitsOneAskingForIt) {
    RunResult r = runTool({"mock", "init", "--root", root_});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("--topology SYSFS_DIR is required"));
    EXPECT_FALSE(fs::exists(root_ + "/machine.conf"));
}

TEST_F(ToolMock, GivenNoRoot_WhenMockInit_ThenExitsOneAskingForIt) {
    RunResult r = runTool({"mock", "init", "--topology", topology_});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("--root DIR is required"));
}

TEST_F(ToolMock, GivenAGeneratedTopology_WhenMockInit_ThenItPrintsEveryGpu) {
    RunResult r = init();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("mock GPU machine " + root_));
    EXPECT_EQ(gpuLines(r.out), 2u) << r.out;
    EXPECT_THAT(r.out, HasSubstr("GPU 0x1000  node 1  renderD128")) << r.out;
}

TEST_F(ToolMock, GivenAFreshMachine_WhenMockStatus_ThenItShowsNoOpenDevices) {
    initOrFail();
    RunResult r = status();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_EQ(gpuLines(r.out), 2u) << r.out;
    EXPECT_THAT(r.out, HasSubstr("\nno open devices\n")) << r.out;
}

TEST_F(ToolMock, GivenAnUnknownOperation_WhenMockFault_ThenExitsOneListingTheAcceptedOperations) {
    initOrFail();
    RunResult r = runTool({"mock", "fault", "--root", root_, "--op", "bogus"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("criu-amdgpu mock fault: --op: unknown fault operation 'bogus'"));
    for (const char* op : kOperations)
        EXPECT_THAT(r.err, HasSubstr(op));
}

TEST_F(ToolMock, GivenPauseAtTwo_WhenMockFault_ThenTheSecondPauseIsConfiguredToFail) {
    initOrFail();
    RunResult r = runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", "2"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    // ROOT/faults: one "<operation> <nth call>" line per fault (backends/mock/driver/machine.h).
    EXPECT_EQ(testsupport::readFile(root_ + "/faults"), "pause 2\n");
}

TEST_F(ToolMock, GivenStall_WhenMockFault_ThenTheCallIsConfiguredToWaitNotFail) {
    initOrFail();
    RunResult r =
        runTool({"mock", "fault", "--root", root_, "--op", "checkpoint", "--at", "3", "--stall"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_EQ(testsupport::readFile(root_ + "/faults"), "checkpoint 3 stall\n");
}

TEST_F(ToolMock, GivenStallWithoutAnOperation_WhenMockFault_ThenExitsOne) {
    initOrFail();
    RunResult r = runTool({"mock", "fault", "--root", root_, "--stall"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("--stall"));
}

TEST_F(ToolMock, GivenAConfiguredFault_WhenMockFaultClear_ThenNoFaultRemains) {
    initOrFail();
    ASSERT_EQ(runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", "2"}).exitCode,
              0);
    RunResult r = runTool({"mock", "fault", "--root", root_, "--clear"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_EQ(testsupport::readFile(root_ + "/faults"), "");
}

TEST_F(ToolMock, GivenAConfiguredFault_WhenMockFaultIsRejected_ThenTheConfiguredFaultStays) {
    initOrFail();
    ASSERT_EQ(runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", "2"}).exitCode,
              0);
    EXPECT_EQ(runTool({"mock", "fault", "--root", root_, "--op", "paus"}).exitCode, 1);
    EXPECT_EQ(runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", "soon"}).exitCode,
              1);
    EXPECT_EQ(testsupport::readFile(root_ + "/faults"), "pause 2\n");
}

TEST_F(ToolMock, GivenABadCallNumber_WhenMockFault_ThenExitsOneSayingWhatIsAccepted) {
    initOrFail();
    for (const char* at : {"0", "soon", "-1", "2x"}) {
        RunResult r = runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", at});
        EXPECT_EQ(r.exitCode, 1) << r.describe();
        EXPECT_THAT(r.err, HasSubstr(std::string("criu-amdgpu mock fault: --at: '") + at +
                                     "' is neither a call number (1, 2, ...) nor 'always'"));
        EXPECT_FALSE(fs::exists(root_ + "/faults")) << at;
    }
}

TEST_F(ToolMock, GivenAHexCallNumber_WhenMockFault_ThenTheFaultsFileHasItInDecimal) {
    initOrFail();
    RunResult r = runTool({"mock", "fault", "--root", root_, "--op", "pause", "--at", "0x10"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_EQ(testsupport::readFile(root_ + "/faults"), "pause 16\n");
}

TEST_F(ToolMock, GivenADirectoryThatIsNotAMockMachine_WhenMockReset_ThenExitsOneAndLeavesItAlone) {
    std::string plain = dir_ / "plain";
    testsupport::writeFile(plain + "/keep.txt", "mine\n");
    RunResult r = runTool({"mock", "reset", "--root", plain});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(plain + " is not a mock GPU machine"));
    EXPECT_EQ(testsupport::readFile(plain + "/keep.txt"), "mine\n");
    EXPECT_FALSE(fs::exists(plain + "/state"));
}

TEST_F(ToolMock, GivenAMockMachine_WhenMockReset_ThenItSaysSoAndStatusStillShowsTheGpus) {
    initOrFail();
    RunResult r = runTool({"mock", "reset", "--root", root_});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("mock GPU machine " + root_ + " reset"));
    RunResult after = status();
    EXPECT_EQ(gpuLines(after.out), 2u) << after.describe();
    EXPECT_THAT(after.out, HasSubstr("no open devices"));
}

TEST_F(ToolMock, GivenAWorkloadRanToCompletion_WhenMockStatus_ThenItStillShowsNoOpenDevices) {
    initOrFail();
    RunResult workload = tooltest::runProgram(kWorkload,
                                              {"--root", root_, "--gpus", "2", "--buffers", "2",
                                               "--size", "4096", "--steps", "3", "--step-ms", "0"},
                                              tooltest::cleanEnv());
    ASSERT_EQ(workload.exitCode, 0) << workload.describe();
    ASSERT_THAT(workload.out, HasSubstr("checksum ")) << workload.describe();
    RunResult r = status();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("\nno open devices\n")) << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr("context "))) << r.out;
}

} // namespace
