// criu-amdgpu without a subcommand, with --help, and with an unknown subcommand.
#include "run_tool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using testing::HasSubstr;
using tooltest::RunResult;
using tooltest::runTool;

const char* const kSubcommands[] = {"config", "mock", "probe", "topology"};

// True when `usage` has a line "  NAME  summary" for the subcommand.
bool listsSubcommand(const std::string& usage, const std::string& name) {
    for (const std::string& line : tooltest::lines(usage))
        if (line.rfind("  " + name + " ", 0) == 0 && line.size() > name.size() + 3)
            return true;
    return false;
}

TEST(ToolMain, GivenNoArguments_WhenRun_ThenExitsOneWithUsageOnStderr) {
    RunResult r = runTool({});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("usage: criu-amdgpu COMMAND"));
    EXPECT_EQ(r.out, "");
}

TEST(ToolMain, GivenNoArguments_WhenRun_ThenUsageListsEverySubcommand) {
    RunResult r = runTool({});
    for (const char* name : kSubcommands)
        EXPECT_TRUE(listsSubcommand(r.err, name)) << name << "\n" << r.describe();
}

TEST(ToolMain, GivenHelp_WhenRun_ThenExitsZeroWithUsageListingEverySubcommandOnStdout) {
    RunResult r = runTool({"--help"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("usage: criu-amdgpu COMMAND"));
    for (const char* name : kSubcommands)
        EXPECT_TRUE(listsSubcommand(r.out, name)) << name << "\n" << r.describe();
    EXPECT_EQ(r.err, "");
}

TEST(ToolMain, GivenAnUnknownCommand_WhenRun_ThenExitsOneNamingIt) {
    RunResult r = runTool({"frobnicate"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate'"));
    EXPECT_EQ(r.out, "");
}

TEST(ToolMain, GivenSubcommandHelp_WhenRun_ThenEachSubcommandExitsZeroWithItsUsage) {
    for (const char* name : kSubcommands) {
        RunResult r = runTool({name, "--help"});
        EXPECT_EQ(r.exitCode, 0) << name << "\n" << r.describe();
        EXPECT_THAT(r.out, HasSubstr(std::string("criu-amdgpu ") + name)) << r.describe();
    }
}

} // namespace
