#pragma once
/// \file
/// The generated documentation that ships: the man pages criu-amdgpu-options(5) (from the option
/// table), criu-amdgpu(1) and mockgpu-workload(1) (from the programs' own help), and the example
/// YAML file (from the option table).

#include "config/option_table.h"

#include <string>
#include <vector>

namespace man {

/// Where the installed files are, as the pages name them.
struct Layout {
    std::string version;   ///< the project version, e.g. "0.2.0"
    std::string pluginDir; ///< where criu loads amdgpu_plugin.so from, e.g. /usr/lib/criu
    std::string docDir;    ///< e.g. /usr/share/doc/criu-amdgpu
};

/// criu-amdgpu-options(5): every option, every source and its precedence, every environment
/// variable (CRIU_AMDGPU_* and KFD_*), the files, and examples.
std::string optionsPage(const Layout& layout);

/// One subcommand of criu-amdgpu: its name, one-line summary and `--help` text.
struct ToolCommand {
    std::string name;
    std::string summary;
    std::string help;
};

/// The commands listed by `criu-amdgpu --help` (lines "  NAME  SUMMARY" after "commands:");
/// empty when the text has no such list.
std::vector<ToolCommand> commandsOfUsage(const std::string& usage);

/// criu-amdgpu(1): the commands with their help texts, the environment and the files.
std::string toolPage(const Layout& layout, const std::vector<ToolCommand>& commands);

/// mockgpu-workload(1) from the workload's `--help` text.
std::string workloadPage(const Layout& layout, const std::string& help);

/// The example /etc/criu/amdgpu.yaml: every option that the YAML file may set, commented out at
/// its default, with its help text. Loading it changes nothing.
std::string exampleYaml();

/// Whether the example YAML file shows the option at its default: false where writing the
/// default would not mean the default (an unset log level; a default file, which need not
/// exist, while a named one must). Those lines show another value and say what the default is.
bool exampleShowsDefault(const config::OptionSpec& spec);

} // namespace man
