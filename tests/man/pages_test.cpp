// The built man pages as man(1) renders them: every option, variable, command and file is there,
// and man reports nothing (the check lintian runs on the package).
#include "man_render.h"
#include "pages.h"

#include "run_tool.h"

#include "config/option_table.h"
#include "config/options_guide.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using testing::HasSubstr;

// What the program prints on stdout for these arguments.
std::string outputOf(const std::string& program, const std::vector<std::string>& args) {
    return tooltest::runProgram(program, args, tooltest::cleanEnv()).out;
}

mantest::Rendering renderBuilt(const std::string& name) {
    mantest::Rendering r = mantest::render(mantest::builtPage(name));
    EXPECT_TRUE(r.ok) << "man could not render " << name
                      << " (is man-db installed?): " << r.warnings;
    return r;
}

TEST(ManPages, ManRendersEveryPageWithoutAWarning) {
    std::vector<std::string> pages{"criu-amdgpu.1", "criu-amdgpu-options.5"};
    if (CRIU_AMDGPU_MAN_TEST_WORKLOAD)
        pages.push_back("mockgpu-workload.1");
    for (const std::string& page : pages) {
        mantest::Rendering r = renderBuilt(page);
        EXPECT_EQ(r.warnings, "") << page;
        EXPECT_GT(r.text.size(), 1000u) << page;
    }
}

TEST(ManPages, OptionsPageCoversEveryOptionWithItsNamesAndHelp) {
    mantest::Rendering r = renderBuilt("criu-amdgpu-options.5");
    for (const config::OptionSpec& spec : config::optionTable()) {
        std::string name(spec.name);
        EXPECT_THAT(r.text, HasSubstr(" " + name + " " + config::optionTypeName(spec.type)))
            << "no entry for option " << name;
        EXPECT_THAT(r.text, HasSubstr(mantest::asRendered(std::string(spec.help)))) << name;
        for (const config::OptionSpelling& spelling : config::optionSpellings(spec)) {
            EXPECT_THAT(r.text, HasSubstr(mantest::asRendered(spelling.text))) << name;
        }
        if (spec.allows(config::SourceKind::Env)) {
            EXPECT_THAT(r.text, HasSubstr(std::string(spec.envName) + " Sets " + name + "."))
                << name;
        }
        if (spec.allows(config::SourceKind::Env) && !spec.legacyEnv.empty()) {
            EXPECT_THAT(r.text, HasSubstr(std::string(spec.legacyEnv) + " Sets " + name)) << name;
        }
    }
}

TEST(ManPages, OptionsPageExplainsPrecedenceAndEveryValueType) {
    mantest::Rendering r = renderBuilt("criu-amdgpu-options.5");
    for (const config::DocSection& section :
         {config::optionSourcesSection(), config::backendPreferenceSection()})
        for (const config::DocBlock& block : section.blocks)
            EXPECT_THAT(r.text, HasSubstr(mantest::asRendered(block.text)));
    for (config::OptionType type : config::kOptionTypes)
        EXPECT_THAT(r.text, HasSubstr(std::string(config::optionTypeName(type)) + " " +
                                      mantest::asRendered(config::optionTypeSyntax(type))));
}

TEST(ManPages, OptionsPageNamesTheInstalledFiles) {
    mantest::Rendering r = renderBuilt("criu-amdgpu-options.5");
    for (const char* file :
         {"/etc/criu/amdgpu.yaml", "/etc/criu/amdgpu.conf", "/lib/criu/amdgpu_plugin.so",
          "/lib/criu/amdgpu/", "/examples/amdgpu.yaml"})
        EXPECT_THAT(r.text, HasSubstr(file));
}

TEST(ManPages, ToolPageHasEveryCommandWithItsHelpAndEveryVariable) {
    std::string usage = outputOf(CRIU_AMDGPU_TOOL, {"--help"});
    std::vector<man::ToolCommand> commands = man::commandsOfUsage(usage);
    ASSERT_GE(commands.size(), 4u) << usage;
    mantest::Rendering r = renderBuilt("criu-amdgpu.1");
    for (const man::ToolCommand& command : commands) {
        std::string help = outputOf(CRIU_AMDGPU_TOOL, {command.name, "--help"});
        ASSERT_FALSE(help.empty()) << command.name;
        EXPECT_THAT(r.text, HasSubstr(command.name + " " + command.summary));
        EXPECT_THAT(r.text, HasSubstr(mantest::asRendered(help))) << command.name;
    }
    for (const config::OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(config::SourceKind::Env))
            continue;
        EXPECT_THAT(r.text, HasSubstr(std::string(spec.envName))) << spec.name;
        if (!spec.legacyEnv.empty()) {
            EXPECT_THAT(r.text, HasSubstr(std::string(spec.legacyEnv))) << spec.name;
        }
    }
}

#if CRIU_AMDGPU_MAN_TEST_WORKLOAD
TEST(ManPages, WorkloadPageHasTheWorkloadsHelp) {
    std::string help =
        outputOf(std::string(CRIU_AMDGPU_BINARY_DIR) + "/bin/mockgpu-workload", {"--help"});
    ASSERT_THAT(help, HasSubstr("usage: mockgpu-workload"));
    EXPECT_THAT(renderBuilt("mockgpu-workload.1").text, HasSubstr(mantest::asRendered(help)));
}
#endif

TEST(ManPages, CommandListIsReadFromTheUsageText) {
    std::vector<man::ToolCommand> commands = man::commandsOfUsage(
        "usage: x COMMAND\n\ncommands:\n  config     show it\n  probe      which backend\n\n"
        "  later      not a command\n");
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_EQ(commands[0].name, "config");
    EXPECT_EQ(commands[0].summary, "show it");
    EXPECT_EQ(commands[1].name, "probe");
    EXPECT_EQ(commands[1].summary, "which backend");
    EXPECT_TRUE(man::commandsOfUsage("usage: x\n  config  no list header\n").empty());
}

} // namespace
