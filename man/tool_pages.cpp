// criu-amdgpu(1) and mockgpu-workload(1): the programs' own help texts, with the environment and
// files from the option table.
#include "pages.h"
#include "roff.h"

#include "config/config.h"
#include "config/option_table.h"
#include "config/options_guide.h"

#include <sstream>

namespace man {
namespace {

std::string environment() {
    std::string out =
        sectionHeading("ENVIRONMENT") +
        paragraph("The tool reads the plugin's options from the same places as the plugin: "
                  "the YAML file, the options file, the environment and, for `config show`, "
                  "plugin options given on its command line. Each option's variable (and, for "
                  "some, the `KFD_*` name of criu's own amdgpu plugin):");
    for (const config::OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(config::SourceKind::Env))
            continue;
        out += taggedParagraph(markup(config::optionEnvironmentNames(spec)),
                               config::literalSpan(spec.name));
    }
    out += paragraph("criu-amdgpu-options(5) describes each option, their precedence and the "
                     "accepted values.");
    return out;
}

std::string files(const Layout& layout) {
    config::Sources defaults;
    return sectionHeading("FILES") +
           taggedParagraph(bold(defaults.defaultYamlPath) + ", " +
                               bold(defaults.defaultOptionsPath),
                           "The plugin's configuration files; criu-amdgpu-options(5).") +
           taggedParagraph(bold(layout.pluginDir + "/amdgpu/"),
                           "The backends the tool loads by default: the directory `amdgpu` "
                           "beside the plugin, found relative to the tool's own location "
                           "(`../lib/criu/amdgpu`), or the `backend-dir` option.");
}

std::string nameLine(std::string_view text) {
    return sectionHeading("NAME") + escape(text) + "\n";
}

} // namespace

std::vector<ToolCommand> commandsOfUsage(const std::string& usage) {
    std::vector<ToolCommand> commands;
    std::istringstream in(usage);
    std::string line;
    bool inList = false;
    while (std::getline(in, line)) {
        if (line == "commands:") {
            inList = true;
            continue;
        }
        if (!inList)
            continue;
        if (line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ')
            break;
        size_t nameEnd = line.find(' ', 2);
        size_t summary = line.find_first_not_of(' ', nameEnd);
        if (nameEnd == std::string::npos || summary == std::string::npos)
            break;
        commands.push_back({line.substr(2, nameEnd - 2), line.substr(summary), ""});
    }
    return commands;
}

std::string toolPage(const Layout& layout, const std::vector<ToolCommand>& commands) {
    std::string out = titleLine("criu-amdgpu", 1, layout.version, "User Commands");
    out += nameLine("criu-amdgpu - inspect GPUs, backends and configuration of the criu amdgpu "
                    "plugin");
    out += sectionHeading("SYNOPSIS") + bold("criu-amdgpu") + " " + italic("COMMAND") + " [" +
           italic("ARGS") + "...]\n.br\n" + bold("criu-amdgpu") + " " + italic("COMMAND") + " " +
           bold("--help") + "\n";
    out += sectionHeading("DESCRIPTION") +
           paragraph("`criu-amdgpu` is the companion of `amdgpu_plugin.so`, the plugin with which "
                     "criu(8) checkpoints and restores processes that use AMD GPUs. It loads the "
                     "same backends and reads the same configuration as the plugin, so it tells "
                     "what the plugin would do on this machine: which backend serves it, what "
                     "every option is set to and where that came from, which GPUs there are, "
                     "and whether a checkpoint from another machine can be restored here. It "
                     "also sets up the mock GPU, a simulated GPU for trying checkpoints without "
                     "AMD hardware.");
    out += sectionHeading("COMMANDS");
    for (const ToolCommand& command : commands)
        out += subsectionHeading(command.name) + paragraph(command.summary) + example(command.help);
    out += sectionHeading("EXIT STATUS") +
           paragraph("0 on success and 1 on bad input or a failure, with a message that names "
                     "what to fix. `probe` exits with 2 when no backend would be chosen, "
                     "`topology match` when no mapping exists.");
    out += environment();
    out += files(layout);
    out += sectionHeading("SEE ALSO") + bold("criu-amdgpu-options") + "(5), " +
           bold("mockgpu-workload") + "(1), " + bold("criu") + "(8)\n";
    return out;
}

std::string workloadPage(const Layout& layout, const std::string& help) {
    std::string out = titleLine("mockgpu-workload", 1, layout.version, "User Commands");
    out += nameLine("mockgpu-workload - a sample program whose state lives on the mock GPU");
    out += sectionHeading("SYNOPSIS") + bold("mockgpu-workload") + " " + bold("--root") + " " +
           italic("DIR") + " [" + italic("OPTIONS") + "]\n";
    out += sectionHeading("DESCRIPTION") +
           paragraph("A deterministic computation on the mock GPU of `criu-amdgpu mock init`: "
                     "checkpoint it with criu in the middle, restore it, and its final checksum "
                     "equals that of an uninterrupted run. Its help text:") +
           example(help);
    out += sectionHeading("EXAMPLES") +
           example("criu-amdgpu topology generate --out /tmp/topo --gpus 2\n"
                   "criu-amdgpu mock init --root /tmp/mockgpu --topology /tmp/topo\n"
                   "mockgpu-workload --root /tmp/mockgpu --gpus 2 --steps 40 &\n"
                   "CRIU_AMDGPU_MOCK_ROOT=/tmp/mockgpu criu dump -t $! -D /tmp/img --shell-job\n"
                   "criu-amdgpu mock reset --root /tmp/mockgpu\n"
                   "CRIU_AMDGPU_MOCK_ROOT=/tmp/mockgpu criu restore -D /tmp/img --shell-job");
    out += sectionHeading("FILES") +
           taggedParagraph(bold(layout.pluginDir + "/amdgpu/mock.so"),
                           "The mock backend the plugin uses when a mock root is set "
                           "(`mock-root`, `CRIU_AMDGPU_MOCK_ROOT`).");
    out += sectionHeading("SEE ALSO") + bold("criu-amdgpu") + "(1), " +
           bold("criu-amdgpu-options") + "(5), " + bold("criu") + "(8)\n";
    return out;
}

} // namespace man
