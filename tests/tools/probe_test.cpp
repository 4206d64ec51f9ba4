// criu-amdgpu probe, run as a process: which backends it lists, why they are (not) present, the
// choice, the exit code (0 chosen, 2 none, 1 bad input) and the --json shape.
#include "run_tool.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace {

using nlohmann::json;
using testing::HasSubstr;
using testing::Not;
using testing::StartsWith;
using tooltest::cleanEnv;
using tooltest::RunResult;
using tooltest::runTool;

constexpr const char* kBackendDir = CRIU_AMDGPU_BUILD_BACKEND_DIR;

// The environment of the probe tests: the build backend dir, nothing else configured.
tooltest::Env probeEnv(const tooltest::Env& extra = {}) {
    tooltest::Env env = cleanEnv({{"CRIU_AMDGPU_BACKEND_DIR", kBackendDir}});
    for (const auto& [name, value] : extra)
        env[name] = value;
    return env;
}

// The backend line "  NAME  ..." of the text output ("" when there is none).
std::string backendLine(const std::string& out, const std::string& name) {
    for (const std::string& line : tooltest::lines(out))
        if (line.rfind("  " + name + " ", 0) == 0)
            return line;
    return "";
}

// True when some backend line says the backend is present (a real GPU on this machine).
bool someBackendPresent(const std::string& out) {
    for (const std::string& line : tooltest::lines(out))
        if (line.rfind("  ", 0) == 0 && line.find(" present, ") != std::string::npos)
            return true;
    return false;
}

class ToolProbe : public ::testing::Test {
protected:
    void SetUp() override {
        if (!CRIU_AMDGPU_TOOLS_TEST_MOCK)
            GTEST_SKIP() << "the mock backend is not built";
    }
    // A mock GPU machine with two GPUs, made with the tool; returns its root.
    std::string makeMock() {
        std::string root = dir_ / "mockgpu";
        RunResult made = tooltest::makeMockMachine(dir_ / "topology", root, 2);
        EXPECT_EQ(made.exitCode, 0) << made.describe();
        return root;
    }
    testsupport::TempDir dir_;
};

TEST_F(ToolProbe, GivenTheBuildBackendDir_WhenProbe_ThenItListsTheMockBackendFromThere) {
    RunResult r = runTool({"probe"}, probeEnv());
    EXPECT_THAT(r.out, StartsWith(std::string("backends in ") + kBackendDir + ":\n"))
        << r.describe();
    EXPECT_NE(backendLine(r.out, "mock"), "") << r.describe();
}

TEST_F(ToolProbe, GivenNoMockRoot_WhenProbe_ThenMockIsNotPresentNamingCriuAmdgpuMockRoot) {
    RunResult r = runTool({"probe"}, probeEnv());
    std::string mock = backendLine(r.out, "mock");
    EXPECT_THAT(mock, HasSubstr("not present: ")) << r.describe();
    EXPECT_THAT(mock, HasSubstr("CRIU_AMDGPU_MOCK_ROOT")) << r.describe();
}

TEST_F(ToolProbe, GivenNoMockRoot_WhenProbe_ThenExitsTwoUnlessARealBackendIsPresent) {
    RunResult r = runTool({"probe"}, probeEnv());
    if (someBackendPresent(r.out)) {
        // A real AMD GPU serves this machine: it is chosen, never the mock.
        EXPECT_EQ(r.exitCode, 0) << r.describe();
        EXPECT_THAT(r.out, HasSubstr("chosen: ")) << r.describe();
        EXPECT_THAT(r.out, Not(HasSubstr("chosen: mock"))) << r.describe();
    } else {
        EXPECT_EQ(r.exitCode, 2) << r.describe();
        EXPECT_THAT(r.out, HasSubstr("chosen: none: ")) << r.describe();
    }
}

TEST_F(ToolProbe, GivenAMockRoot_WhenProbe_ThenMockIsChosenAndExitIsZero) {
    std::string root = makeMock();
    RunResult r = runTool({"probe"}, probeEnv({{"CRIU_AMDGPU_MOCK_ROOT", root}}));
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(backendLine(r.out, "mock"), HasSubstr("present, priority")) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("\nchosen: mock\n")) << r.describe();
}

TEST_F(ToolProbe, GivenAMockRootThatIsNotAMockMachine_WhenProbe_ThenExitsTwoSayingSo) {
    std::string notMock = dir_ / "plain";
    std::filesystem::create_directories(notMock);
    RunResult r = runTool({"probe"}, probeEnv({{"CRIU_AMDGPU_MOCK_ROOT", notMock}}));
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("chosen: none: the mock GPU at " + notMock)) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("is not a mock GPU machine")) << r.describe();
}

TEST_F(ToolProbe, GivenJsonAndAMockRoot_WhenProbe_ThenOneObjectWithBackendsAndChosenMock) {
    std::string root = makeMock();
    RunResult r = runTool({"probe", "--json"}, probeEnv({{"CRIU_AMDGPU_MOCK_ROOT", root}}));
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    json out = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(out.is_discarded()) << r.describe();
    ASSERT_TRUE(out.is_object()) << r.out;
    EXPECT_EQ(out.at("backend_dir"), kBackendDir);
    ASSERT_TRUE(out.at("backends").is_array()) << r.out;
    const json* mock = nullptr;
    for (const json& b : out.at("backends")) {
        ASSERT_TRUE(b.is_object()) << r.out;
        EXPECT_TRUE(b.at("name").is_string() && b.at("path").is_string() &&
                    b.at("loaded").is_boolean())
            << r.out;
        if (b.at("name") == "mock")
            mock = &b;
    }
    ASSERT_NE(mock, nullptr) << r.out;
    EXPECT_TRUE(mock->at("present").get<bool>()) << r.out;
    EXPECT_TRUE(mock->at("reason").is_string()) << r.out;
    EXPECT_TRUE(mock->at("capabilities").is_array()) << r.out;
    ASSERT_TRUE(out.at("chosen").is_string()) << r.out;
    EXPECT_EQ(out.at("chosen"), "mock");
}

TEST_F(ToolProbe, GivenJsonAndNothingChosen_WhenProbe_ThenChosenIsEmptyWithAnError) {
    RunResult r = runTool({"probe", "--json"}, probeEnv());
    json out = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(!out.is_discarded() && out.is_object()) << r.describe();
    ASSERT_TRUE(out.at("chosen").is_string()) << r.out;
    if (out.at("chosen") != "")
        GTEST_SKIP() << "a real backend serves this machine: " << out.at("chosen");
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_TRUE(out.at("error").is_string()) << r.out;
    EXPECT_NE(out.at("error"), "") << r.out;
}

TEST_F(ToolProbe, GivenBackendForcedToKfd_WhenProbe_ThenTheFailureCarriesKfdsProbeAnswer) {
    // What kfd itself says on this machine, unforced (kfd may not be built at all).
    json plain = json::parse(runTool({"probe", "--json"}, probeEnv()).out, nullptr, false);
    ASSERT_TRUE(!plain.is_discarded() && plain.at("backends").is_array());
    const json* kfd = nullptr;
    for (const json& b : plain.at("backends"))
        if (b.at("name") == "kfd" && b.at("loaded").get<bool>())
            kfd = &b;

    RunResult r = runTool({"probe"}, probeEnv({{"CRIU_AMDGPU_BACKEND", "kfd"}}));
    if (kfd && kfd->at("present").get<bool>()) {
        EXPECT_EQ(r.exitCode, 0) << r.describe();
        EXPECT_THAT(r.out, HasSubstr("chosen: kfd\n")) << r.describe();
        return;
    }
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("chosen: none: the configured backend cannot be used: "))
        << r.describe();
    if (kfd) {
        std::string reason = kfd->at("reason");
        ASSERT_NE(reason, "") << "kfd gives no reason";
        EXPECT_THAT(r.out, HasSubstr("backend 'kfd' is not present: " + reason)) << r.describe();
    } else {
        EXPECT_THAT(r.out, HasSubstr("backend 'kfd' was not found among the loaded backends"))
            << r.describe();
    }
}

TEST_F(ToolProbe, GivenAnEmptyBackendDir_WhenProbe_ThenListsNoneAndExitsTwo) {
    std::string empty = dir_ / "empty";
    std::filesystem::create_directories(empty);
    RunResult r = runTool({"probe", "--backend-dir", empty}, probeEnv());
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, StartsWith("backends in " + empty + ":\n  (none)\n")) << r.describe();
}

TEST_F(ToolProbe, GivenNoBackendDirConfigured_WhenProbe_ThenItLooksNextToTheTool) {
    RunResult r = runTool({"probe"}, cleanEnv());
    std::string first = tooltest::lines(r.out).empty() ? "" : tooltest::lines(r.out)[0];
    ASSERT_THAT(first, StartsWith("backends in ")) << r.describe();
    std::string dir =
        first.substr(strlen("backends in "), first.size() - strlen("backends in ") - 1);
    std::error_code ec;
    EXPECT_TRUE(std::filesystem::equivalent(dir, kBackendDir, ec)) << dir << " vs " << kBackendDir;
}

// Issue 34, item 5: code and configuration only from paths no one but root (or the caller) writes.
TEST_F(ToolProbe, GivenAWorldWritableBackendDirOption_WhenProbe_ThenNothingInItIsLoaded) {
    std::string open = dir_ / "open";
    std::filesystem::create_directories(open);
    std::filesystem::copy_file(std::string(kBackendDir) + "/mock.so", open + "/mock.so");
    ASSERT_EQ(chmod(open.c_str(), 0777), 0);
    RunResult r = runTool({"probe", "--backend-dir", open}, probeEnv());
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("skipped: backend-dir '" + open +
                                 "' is writable by group or others (mode 0777)"))
        << r.describe();
    EXPECT_EQ(backendLine(r.out, "mock"), "") << r.describe();
}

TEST_F(ToolProbe, GivenAConfigFileOthersMayWrite_WhenProbe_ThenExitsOneNamingItAndWhy) {
    std::string yaml = dir_ / "amdgpu.yaml";
    testsupport::writeFile(yaml, "numa_check: false\n");
    ASSERT_EQ(chmod(yaml.c_str(), 0666), 0);
    RunResult r = runTool({"probe"}, probeEnv({{"CRIU_AMDGPU_CONFIG", yaml}}));
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("config '" + yaml + "' is writable by group or others"))
        << r.describe();
}

TEST_F(ToolProbe, GivenAnUnknownArgument_WhenProbe_ThenExitsOneNamingIt) {
    RunResult r = runTool({"probe", "--frobnicate"}, probeEnv());
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("unexpected argument '--frobnicate'"));
}

TEST_F(ToolProbe, GivenABadConfigurationValue_WhenProbe_ThenExitsOneNamingTheVariable) {
    RunResult r = runTool({"probe"}, probeEnv({{"KFD_NUMA_CHECK", "maybe"}}));
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("KFD_NUMA_CHECK"));
}

} // namespace
