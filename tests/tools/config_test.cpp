// criu-amdgpu config, run as a process: effective values and their origins from each source, the
// --json shape, errors for bad input, and `config help` against the committed docs/options.md.
#include "run_tool.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <regex>

namespace {

using testing::HasSubstr;
using tooltest::cleanEnv;
using tooltest::RunResult;
using tooltest::runTool;

struct Row {
    std::string value;
    std::string origin;
};

std::string trimmed(const std::string& s) {
    size_t b = s.find_first_not_of(' ');
    size_t e = s.find_last_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The row of option `name` in the `config show` table (columns found from the header).
std::optional<Row> row(const std::string& table, const std::string& name) {
    auto all = tooltest::lines(table);
    if (all.empty())
        return std::nullopt;
    size_t valueCol = all[0].find("VALUE"), originCol = all[0].find("ORIGIN");
    if (all[0].rfind("OPTION", 0) != 0 || valueCol == std::string::npos ||
        originCol == std::string::npos)
        return std::nullopt;
    for (size_t i = 1; i < all.size(); ++i) {
        const std::string& line = all[i];
        if (line.size() < originCol || trimmed(line.substr(0, valueCol)) != name)
            continue;
        return Row{trimmed(line.substr(valueCol, originCol - valueCol)), line.substr(originCol)};
    }
    return std::nullopt;
}

// The option names of the summary table of the committed docs/options.md.
std::vector<std::string> documentedOptions() {
    std::string doc = testsupport::readFile(CRIU_AMDGPU_SOURCE_DIR "/docs/options.md");
    std::vector<std::string> names;
    std::regex entry(R"(\n\| \[`([a-z0-9-]+)`\]\(#)");
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), entry);
         it != std::sregex_iterator(); ++it)
        names.push_back((*it)[1]);
    return names;
}

class ToolConfig : public ::testing::Test {
protected:
    testsupport::TempDir dir_;
};

TEST_F(ToolConfig, GivenNothingConfigured_WhenConfigShow_ThenEveryDocumentedOptionIsListed) {
    RunResult r = runTool({"config", "show"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    std::vector<std::string> names = documentedOptions();
    ASSERT_GE(names.size(), 20u);
    for (const std::string& name : names)
        EXPECT_TRUE(row(r.out, name)) << name << " missing\n" << r.out;
    EXPECT_EQ(tooltest::lines(r.out).size(), names.size() + 1) << r.out;
}

TEST_F(ToolConfig, GivenNothingConfigured_WhenConfigShow_ThenEveryValueComesFromDefault) {
    RunResult r = runTool({"config", "show"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    for (const std::string& name : documentedOptions()) {
        auto found = row(r.out, name);
        ASSERT_TRUE(found) << name;
        // The harness names "no file" for these two through the environment.
        if (name == "config" || name == "options-file")
            continue;
        EXPECT_EQ(found->origin, "default") << name << "\n" << r.out;
    }
    EXPECT_EQ(row(r.out, "numa-check")->value, "true");
    EXPECT_EQ(row(r.out, "backend")->value, "auto");
    EXPECT_EQ(row(r.out, "max-buffer-size")->value, "0");
    EXPECT_EQ(row(r.out, "log-level")->value, "unset");
}

TEST_F(ToolConfig, GivenEmptyConfigAndOptionsFileVariables_WhenConfigShow_ThenNoFileIsRead) {
    RunResult r = runTool({"config", "show"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto config = row(r.out, "config");
    auto options = row(r.out, "options-file");
    ASSERT_TRUE(config && options) << r.out;
    EXPECT_EQ(config->value, "\"\"");
    EXPECT_EQ(config->origin, "env CRIU_AMDGPU_CONFIG");
    EXPECT_EQ(options->value, "\"\"");
    EXPECT_EQ(options->origin, "env CRIU_AMDGPU_OPTIONS_FILE");
}

TEST_F(ToolConfig, GivenKfdNumaCheckZero_WhenConfigShow_ThenNumaCheckIsFalseFromThatVariable) {
    RunResult r = runTool({"config", "show"}, cleanEnv({{"KFD_NUMA_CHECK", "0"}}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto numa = row(r.out, "numa-check");
    ASSERT_TRUE(numa) << r.out;
    EXPECT_EQ(numa->value, "false");
    EXPECT_EQ(numa->origin, "env KFD_NUMA_CHECK");
}

TEST_F(ToolConfig, GivenAYamlFile_WhenConfigShow_ThenItsValueHasTheFileAndLineAsOrigin) {
    std::string yaml = dir_ / "amdgpu.yaml";
    testsupport::writeFile(yaml, "# site settings\nvram_size_check: false\n");
    RunResult r = runTool({"config", "show"}, cleanEnv({{"CRIU_AMDGPU_CONFIG", yaml}}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto vram = row(r.out, "vram-size-check");
    ASSERT_TRUE(vram) << r.out;
    EXPECT_EQ(vram->value, "false");
    EXPECT_EQ(vram->origin, yaml + ":2");
}

TEST_F(ToolConfig, GivenAnOptionsFile_WhenConfigShow_ThenItsValueHasTheFileAsOrigin) {
    std::string conf = dir_ / "amdgpu.conf";
    testsupport::writeFile(conf, "plugin-opt amdgpu:exact-gpu-count=1\n");
    RunResult r = runTool({"config", "show"}, cleanEnv({{"CRIU_AMDGPU_OPTIONS_FILE", conf}}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto exact = row(r.out, "exact-gpu-count");
    ASSERT_TRUE(exact) << r.out;
    EXPECT_EQ(exact->value, "true");
    EXPECT_THAT(exact->origin, HasSubstr(conf));
}

TEST_F(ToolConfig, GivenAMissingNamedYamlFile_WhenConfigShow_ThenExitsOneNamingIt) {
    std::string missing = dir_ / "nope.yaml";
    RunResult r = runTool({"config", "show"}, cleanEnv({{"CRIU_AMDGPU_CONFIG", missing}}));
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(missing));
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolConfig, GivenAPluginOptionAndTheEnvironment_WhenConfigShow_ThenThePluginOptionWins) {
    RunResult r = runTool({"config", "show", "--plugin-option", "amdgpu.numa-check=1"},
                          cleanEnv({{"KFD_NUMA_CHECK", "0"}}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    auto numa = row(r.out, "numa-check");
    ASSERT_TRUE(numa) << r.out;
    EXPECT_EQ(numa->value, "true");
    EXPECT_EQ(numa->origin, "plugin option amdgpu.numa-check");
}

TEST_F(ToolConfig, GivenJson_WhenConfigShow_ThenOneObjectWithAnOptionsArrayOfNameValueOrigin) {
    RunResult r = runTool({"config", "show", "--json"}, cleanEnv({{"KFD_NUMA_CHECK", "0"}}));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    nlohmann::json json = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(json.is_discarded()) << r.out;
    ASSERT_TRUE(json.is_object());
    EXPECT_EQ(json.size(), 1u) << r.out;
    const nlohmann::json& options = json.at("options");
    ASSERT_TRUE(options.is_array()) << r.out;
    EXPECT_EQ(options.size(), documentedOptions().size());
    bool sawNuma = false;
    for (const nlohmann::json& o : options) {
        ASSERT_TRUE(o.is_object());
        EXPECT_EQ(o.size(), 3u) << r.out;
        EXPECT_TRUE(o.at("name").is_string() && o.at("value").is_string() &&
                    o.at("origin").is_string())
            << r.out;
        if (o.at("name") == "numa-check") {
            sawNuma = true;
            EXPECT_EQ(o.at("value"), "false");
            EXPECT_EQ(o.at("origin"), "env KFD_NUMA_CHECK");
        }
    }
    EXPECT_TRUE(sawNuma) << r.out;
}

TEST_F(ToolConfig,
       GivenABadBooleanInTheEnvironment_WhenConfigShow_ThenExitsOneNamingItAndTheAcceptedValues) {
    RunResult r = runTool({"config", "show"}, cleanEnv({{"KFD_VRAM_SIZE_CHECK", "maybe"}}));
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("KFD_VRAM_SIZE_CHECK"));
    EXPECT_THAT(r.err, HasSubstr("'maybe'"));
    EXPECT_THAT(r.err, HasSubstr("accepted: 0, 1, yes, no, true, false, on, off"));
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolConfig,
       GivenAMisspelledCriuAmdgpuVariable_WhenConfigShow_ThenExitsOneSuggestingTheOption) {
    RunResult r = runTool({"config", "show"}, cleanEnv({{"CRIU_AMDGPU_NUMA_CHEK", "0"}}));
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("unknown environment variable 'CRIU_AMDGPU_NUMA_CHEK'"));
    EXPECT_THAT(r.err, HasSubstr("did you mean 'CRIU_AMDGPU_NUMA_CHECK'?"));
    EXPECT_EQ(r.out, "");
}

TEST_F(ToolConfig, GivenAnUnknownArgument_WhenConfigShow_ThenExitsOneNamingIt) {
    RunResult r = runTool({"config", "show", "--frobnicate"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("unexpected argument '--frobnicate'"));
}

TEST_F(ToolConfig, GivenConfigHelp_WhenRun_ThenItPrintsTheCommittedDocsOptionsMdByteForByte) {
    std::string committed = testsupport::readFile(CRIU_AMDGPU_SOURCE_DIR "/docs/options.md");
    ASSERT_NE(committed, "") << "cannot read " CRIU_AMDGPU_SOURCE_DIR "/docs/options.md";
    RunResult r = runTool({"config", "help"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_TRUE(r.out == committed)
        << "docs/options.md is out of date: regenerate it with `criu-amdgpu config help > "
           "docs/options.md` (sizes "
        << r.out.size() << " vs " << committed.size() << ")";
    EXPECT_EQ(r.err, "");
}

} // namespace
