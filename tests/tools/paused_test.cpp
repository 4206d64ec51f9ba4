// criu-amdgpu paused, run as a process: what dump guardians recorded
// (coordination/paused_record.h), a malformed record, and a release where no backend serves. The
// release itself is tested with a real criu killed with its guardian
// (tests/e2e/scenario_criu_killed.sh) and on the fake KFD (tests/kfd/release_paused_test.cpp).
#include "run_tool.h"
#include "temp_dir.h"

#include "coordination/paused_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using testing::HasSubstr;
using tooltest::RunResult;
using tooltest::runTool;

constexpr int kGoneCriu = 999999991; // above any pid_max: never a running process

TEST(ToolPaused, GivenNoRecord_ThenListSaysNothingIsPaused) {
    testsupport::TempDir dir;
    RunResult r = runTool({"paused", "list", "--dir", dir / "none"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("no process recorded as paused in " + dir / "none"));
}

TEST(ToolPaused, GivenARecordOfADeadCriu_ThenListNamesEveryProcessWithItsCriuAndGuardian) {
    testsupport::TempDir dir;
    ASSERT_TRUE(
        coordination::writePausedRecord(dir.path(), {kGoneCriu, kGoneCriu + 1, "kfd", {41, 42}, {}})
            .ok());
    RunResult r = runTool({"paused", "list", "--dir", dir.path()});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("process 42: paused by criu 999999991 (gone), guardian "
                                 "999999992 (gone), kfd backend"));
    r = runTool({"paused", "list", "--dir", dir.path(), "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["recorded"].size(), 2u);
    EXPECT_EQ(j["recorded"][0]["pid"], 41);
    EXPECT_EQ(j["recorded"][0]["criu"], kGoneCriu);
    EXPECT_EQ(j["recorded"][0]["criu_alive"], false);
    EXPECT_EQ(j["recorded"][0]["backend"], "kfd");
    EXPECT_FALSE(j.contains("mock")) << "no mock machine was named";
}

TEST(ToolPaused, GivenAMalformedRecord_ThenListFailsNamingFileAndLine) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "paused-12", "criu 12\npaused twelve\n");
    RunResult r = runTool({"paused", "list", "--dir", dir.path()});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(dir / "paused-12:2"));
}

TEST(ToolPaused, GivenNoBackendServesThisMachine_ThenReleaseSaysSoAndKeepsTheRecord) {
    testsupport::TempDir dir;
    ASSERT_TRUE(coordination::writePausedRecord(dir.path(), {kGoneCriu, 0, "kfd", {41}, {}}).ok());
    RunResult r = runTool({"paused", "release", "--dir", dir.path(), "41"},
                          tooltest::cleanEnv({{"CRIU_AMDGPU_BACKEND_DIR", dir / "no-backends"}}));
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("no backend serves this machine"));
    auto records = coordination::readPausedRecords(dir.path());
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().paused, std::vector<int>{41});
}

TEST(ToolPaused, GivenAPidInNoRecord_ThenReleaseRefusesItNamingItAndKeepsTheRecords) {
    testsupport::TempDir dir;
    ASSERT_TRUE(coordination::writePausedRecord(dir.path(), {kGoneCriu, 0, "kfd", {41}, {}}).ok());
    RunResult r = runTool({"paused", "release", "--dir", dir.path(), "43"},
                          tooltest::cleanEnv({{"CRIU_AMDGPU_BACKEND_DIR", dir / "no-backends"}}));
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("process 43 is in no dump guardian's record in " + dir.path()));
    EXPECT_THAT(r.err, testing::Not(HasSubstr("backend")));
    auto records = coordination::readPausedRecords(dir.path());
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().paused, std::vector<int>{41});
}

} // namespace
