// criu-amdgpu's command line, run as a process: bad arguments exit 1 with a message that names the
// command and the option; numbers and sizes are read by the option table's parsers; every
// command's --help has the layout the man pages are made from.
#include "run_tool.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;
using testing::StartsWith;
using tooltest::RunResult;
using tooltest::runTool;

// Every command that runs something, as typed after criu-amdgpu.
const std::vector<std::vector<std::string>> kLeafCommands = {
    {"config", "show"},    {"config", "help"},       {"mock", "init"},  {"mock", "reset"},
    {"mock", "status"},    {"mock", "fault"},        {"probe"},         {"topology", "show"},
    {"topology", "match"}, {"topology", "generate"}, {"image", "show"}, {"image", "verify"},
    {"image", "check"},    {"image", "flatten"},     {"image", "sign"}, {"paused", "list"},
    {"paused", "release"}};
const std::vector<std::vector<std::string>> kGroupCommands = {{},           {"config"}, {"mock"},
                                                              {"topology"}, {"image"},  {"paused"}};
// The commands whose "help" is the alias of --help (config help prints the options' documentation).
const std::vector<std::vector<std::string>> kHelpAliases = {
    {}, {"mock"}, {"topology"}, {"image"}, {"paused"}};

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words)
        out += (out.empty() ? "" : " ") + w;
    return out;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The lines after the line `heading` up to the next empty line.
std::vector<std::string> section(const std::string& help, const std::string& heading) {
    std::vector<std::string> out;
    bool in = false;
    for (const std::string& line : tooltest::lines(help)) {
        if (in && line.empty())
            break;
        if (in)
            out.push_back(line);
        in = in || line == heading;
    }
    return out;
}

// The usage: the first line and its continuation lines (indented), joined.
std::string usage(const std::string& help) {
    std::string out;
    for (const std::string& line : tooltest::lines(help)) {
        if (line.empty())
            break;
        out += (out.empty() ? "" : " ") + line;
    }
    return out;
}

class ToolArguments : public ::testing::Test {
protected:
    // `topology generate --out DIR args...`; DIR is a fresh directory under the test's.
    RunResult generate(const std::vector<std::string>& args) {
        out_ = dir_ / ("tree" + std::to_string(++trees_));
        return runTool(with({"topology", "generate", "--out", out_}, args));
    }
    // `topology show --json` of the last generated tree.
    nlohmann::json shown() {
        RunResult r = runTool({"topology", "show", "--json", "--root", out_});
        EXPECT_EQ(r.exitCode, 0) << r.describe();
        return nlohmann::json::parse(r.out, nullptr, false);
    }
    testsupport::TempDir dir_;
    std::string out_;
    int trees_ = 0;
};

TEST_F(ToolArguments,
       GivenANonNumber_WhenTopologyGenerate_ThenExitsOneNamingTheOptionAndWritesNothing) {
    RunResult r = generate({"--gpus", "many"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu topology generate: --gpus: 'many' is not a number "
                                  "(accepted: a number from 0 to 1024, decimal or 0x hex)\n"));
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ToolArguments, GivenNumbersOutOfRange_WhenTopologyGenerate_ThenEachNamesItsOptionAndRange) {
    struct Case {
        std::string option, value, accepted;
    };
    for (const Case& c :
         {Case{"--gpus", "1025", "from 0 to 1024"}, Case{"--cpus", "0", "from 1 to 64"},
          Case{"--gpu-id-base", "0xffff0001", "from 1 to 4294901760"},
          Case{"--render-minor-base", "-1", ""},
          Case{"--hives", "99999999999999999999999", "from 0 to 1024"}}) {
        RunResult r = generate({c.option, c.value});
        EXPECT_EQ(r.exitCode, 1) << r.describe();
        EXPECT_THAT(r.err, StartsWith("criu-amdgpu topology generate: " + c.option + ": '" +
                                      c.value + "' is "))
            << r.describe();
        EXPECT_THAT(r.err, HasSubstr(c.accepted)) << r.describe();
        EXPECT_FALSE(fs::exists(out_)) << c.option;
    }
}

TEST_F(ToolArguments,
       GivenABadSizeSuffix_WhenTopologyGenerate_ThenExitsOneNamingVramAndTheSuffixes) {
    RunResult r = generate({"--vram", "16X"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu topology generate: --vram: bad size suffix 'X' in "
                                  "'16X' (accepted suffixes: none for bytes, K, M, G, T"));
}

TEST_F(ToolArguments, GivenHexAndSuffixedValues_WhenTopologyGenerate_ThenTheTreeHasThoseValues) {
    RunResult r = generate(
        {"--gpus", "0x2", "--gpu-id-base", "0x2000", "--render-minor-base", "140", "--vram=16GiB"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    nlohmann::json tree = shown();
    ASSERT_FALSE(tree.is_discarded());
    EXPECT_EQ(tree.at("gpu_count"), 2);
    std::vector<uint64_t> ids, vram;
    std::vector<int> minors;
    for (const nlohmann::json& node : tree.at("nodes")) {
        if (node.at("kind") != "gpu")
            continue;
        ids.push_back(node.at("gpu_id"));
        minors.push_back(node.at("render_minor"));
        vram.push_back(node.at("vram_bytes"));
    }
    EXPECT_EQ(ids, (std::vector<uint64_t>{0x2000, 0x2111}));
    EXPECT_EQ(minors, (std::vector<int>{140, 141}));
    EXPECT_EQ(vram, (std::vector<uint64_t>{16ull << 30, 16ull << 30}));
}

TEST_F(ToolArguments, GivenAnOptionTwice_WhenTopologyGenerate_ThenTheLastValueCounts) {
    ASSERT_EQ(generate({"--gpus", "1", "--gpus", "3"}).exitCode, 0);
    EXPECT_EQ(shown().at("gpu_count"), 3);
}

TEST_F(ToolArguments, GivenAnOptionWithoutItsValue_WhenRun_ThenItSaysWhichValueIsMissing) {
    RunResult r = generate({"--gpus"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu topology generate: --gpus needs a value (N)\n"));
    RunResult show = runTool({"config", "show", "--plugin-option"});
    EXPECT_EQ(show.exitCode, 1) << show.describe();
    EXPECT_THAT(show.err, StartsWith("criu-amdgpu config show: --plugin-option needs a value "
                                     "(amdgpu.NAME=VALUE)\n"));
}

TEST_F(ToolArguments, GivenNoRequiredOption_WhenMockInit_ThenEachMissingOptionIsNamed) {
    RunResult r = runTool({"mock", "init"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu mock init: --root DIR is required\n"
                                  "criu-amdgpu mock init: --topology SYSFS_DIR is required\n"
                                  "usage: criu-amdgpu mock init --root DIR --topology SYSFS_DIR"));
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolArguments,
       GivenAnUnknownCommandOfACommand_WhenRun_ThenExitsOneNamingItAndListingTheCommands) {
    RunResult r = runTool({"mock", "frobnicate"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu mock: unknown command 'frobnicate'\n"));
    EXPECT_EQ(section(r.err, "commands:").size(), 4u) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolArguments, GivenTwoCommands_WhenRun_ThenTheSecondIsAnUnexpectedArgument) {
    RunResult r = runTool({"probe", "config", "show"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu probe: unexpected argument 'config'\n"));
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolArguments, GivenClearWithAnOperation_WhenMockFault_ThenExitsOneNamingBoth) {
    RunResult r = runTool({"mock", "fault", "--root", dir_ / "m", "--clear", "--op", "pause"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu mock fault: --op excludes --clear\n"));
    EXPECT_FALSE(fs::exists(dir_ / "m"));
}

TEST_F(ToolArguments, GivenACallNumberWithoutAnOperation_WhenMockFault_ThenExitsOneAskingForOp) {
    RunResult r = runTool({"mock", "fault", "--root", dir_ / "m", "--at", "2"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, StartsWith("criu-amdgpu mock fault: --at requires --op\n"));
}

TEST_F(ToolArguments, GivenHelpAsACommand_WhenRun_ThenItPrintsWhatHelpPrints) {
    for (const auto& group : kHelpAliases) {
        RunResult alias = runTool(with(group, {"help"}));
        RunResult help = runTool(with(group, {"--help"}));
        EXPECT_EQ(alias.exitCode, 0) << alias.describe();
        EXPECT_EQ(alias.out, help.out) << joined(group);
        EXPECT_EQ(alias.err, "");
    }
}

TEST_F(ToolArguments, GivenHelp_WhenRunForEveryCommand_ThenUsageSummaryAndEveryOptionDescribed) {
    for (const auto& command : kLeafCommands) {
        std::string name = "criu-amdgpu " + joined(command);
        RunResult r = runTool(with(command, {"--help"}));
        ASSERT_EQ(r.exitCode, 0) << r.describe();
        EXPECT_EQ(r.err, "");
        std::string line = usage(r.out);
        EXPECT_THAT(line, StartsWith("usage: " + name)) << r.out;
        // The summary follows the usage as a sentence.
        EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n\n[A-Z][^\n]*\.\n)"))) << r.out;
        std::vector<std::string> options = section(r.out, "options:");
        ASSERT_FALSE(options.empty()) << r.out;
        EXPECT_TRUE(
            std::regex_match(options.back(), std::regex("  -h, --help +print this help and exit")))
            << r.out;
        // Every option of the usage line has a row with its description (on the next line
        // when the option is long).
        std::smatch m;
        for (std::string rest = line; std::regex_search(rest, m, std::regex("--[a-z-]+"));
             rest = m.suffix()) {
            bool described = false;
            for (size_t i = 0; i < options.size(); ++i) {
                if (options[i].rfind("  " + m.str(), 0) != 0)
                    continue;
                std::string after = options[i].substr(2 + m.length());
                std::string next = i + 1 < options.size() ? options[i + 1] : "";
                described = std::regex_match(after, std::regex("( \\S+)?  +[A-Za-z].*")) ||
                            (std::regex_match(after, std::regex("( \\S+)?")) &&
                             std::regex_match(next, std::regex(" {6,}[A-Za-z].*")));
            }
            EXPECT_TRUE(described) << m.str() << " of " << name << "\n" << r.out;
        }
    }
}

TEST_F(ToolArguments, GivenHelp_WhenRunForACommandWithCommands_ThenItListsThemForTheManPages) {
    for (const auto& group : kGroupCommands) {
        std::string name = joined(with({"criu-amdgpu"}, group));
        RunResult r = runTool(with(group, {"--help"}));
        ASSERT_EQ(r.exitCode, 0) << r.describe();
        EXPECT_THAT(r.out, StartsWith("usage: " + name + " COMMAND [ARGS...]\n\n"));
        std::vector<std::string> commands = section(r.out, "commands:");
        size_t expected = 0;
        for (const auto& leaf : kLeafCommands)
            expected += leaf.size() == group.size() + 1 &&
                        std::equal(group.begin(), group.end(), leaf.begin());
        if (group.empty())
            expected = 6; // config, image, mock, paused, probe, topology
        EXPECT_EQ(commands.size(), expected) << r.out;
        for (const std::string& c : commands)
            EXPECT_TRUE(std::regex_match(c, std::regex("  [a-z]+  +[a-z].*"))) << c;
    }
}

TEST_F(ToolArguments, GivenHelp_WhenRunForTheProgram_ThenItSaysHowToGetACommandsHelp) {
    RunResult r = runTool({"--help"});
    EXPECT_THAT(r.out,
                testing::EndsWith("\n\n'criu-amdgpu COMMAND --help' describes one command.\n"));
}

// The man page shows `criu-amdgpu COMMAND --help` of each command of the program: the help of a
// command with commands must hold every one of theirs, so that every option is in the page.
TEST_F(ToolArguments, GivenHelp_WhenRunForACommandWithCommands_ThenItEndsWithTheHelpOfEach) {
    for (const auto& group : kGroupCommands) {
        if (group.empty())
            continue;
        std::string help = runTool(with(group, {"--help"})).out;
        std::string expected;
        for (const auto& leaf : kLeafCommands)
            if (leaf.size() == group.size() + 1 &&
                std::equal(group.begin(), group.end(), leaf.begin())) {
                expected += '\n'; // not "\n" + string: GCC 12's false -Wrestrict at -O3
                expected += runTool(with(leaf, {"--help"})).out;
            }
        ASSERT_FALSE(expected.empty()) << joined(group);
        EXPECT_THAT(help, testing::EndsWith(expected)) << joined(group);
    }
}

TEST_F(ToolArguments, GivenACommandWithCommandsAndNoneOfThem_WhenRun_ThenExitsOneListingThem) {
    for (const auto& group : kGroupCommands) {
        std::string name = joined(with({"criu-amdgpu"}, group));
        RunResult r = runTool(group);
        EXPECT_EQ(r.exitCode, 1) << r.describe();
        EXPECT_THAT(r.err, StartsWith(name + ": COMMAND is required\nusage: " + name +
                                      " COMMAND [ARGS...]\n\ncommands:\n"));
        EXPECT_EQ(r.out, "");
    }
}

} // namespace
