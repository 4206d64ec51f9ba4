#pragma once
/// \file
/// The readers of the four configuration sources. Each turns its source into a list of
/// Assignments (option, typed value, origin) in the order the source states them, validating every
/// name and value; loadConfig (config.h) applies the lists in precedence order. Exposed for tests
/// and for config's own use; other layers call loadConfig/loadSettings.

#include "base/result.h"
#include "config/option_table.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace config {

/// An environment: variable name -> value.
using Environment = std::map<std::string, std::string>;

/// One setting of one option by one source.
struct Assignment {
    const OptionSpec* spec = nullptr; ///< the option set
    TypedValue value;                 ///< its parsed value
    std::string origin;               ///< "/etc/criu/amdgpu.yaml:12", "env KFD_NUMA_CHECK", ...
};

/// The assignments of a file, and whether the file was there.
struct FileAssignments {
    bool present = false;            ///< false: the (default) file does not exist
    std::vector<Assignment> entries; ///< in file order
};

/// Parses `text` as a value of `spec` set by `kind` at `origin`. Errors (ErrorCode::Config) name
/// the origin and the option, and say when the source may not set this option.
base::Result<Assignment> assignmentFromText(const OptionSpec& spec, SourceKind kind,
                                            std::string_view text, std::string origin);

/// The assignment of a flag given without a value ("plugin-opt amdgpu:force-single-gpu-restore"):
/// true for bool options, an error naming the origin for the others.
base::Result<Assignment> assignmentFromBareFlag(const OptionSpec& spec, SourceKind kind,
                                                std::string origin);

/// A plugin option split into its parts: "amdgpu.numa-check=0" gives plugin "amdgpu", name
/// "numa-check", value "0".
struct PluginOptionText {
    std::string plugin;    ///< before the first '.' or ':'
    std::string name;      ///< between the separator and the first '='
    bool hasValue = false; ///< whether there was an '='
    std::string value;     ///< after the first '='
};

/// Splits "PLUGIN.NAME[=VALUE]" or "PLUGIN:NAME[=VALUE]"; false when there is no separator
/// before the '=' or the plugin or name part is empty.
bool splitPluginOption(std::string_view text, PluginOptionText* out);

/// Whether a plugin name in a plugin option means this plugin: "amdgpu" (or "amdgpu_plugin", the
/// name criu's own plugin registers).
bool isAmdgpuPlugin(std::string_view plugin);

/// The assignment of an amdgpu plugin option (already split) from `kind` at `origin`: the name
/// must be in the table (else an error with the nearest name), a value-less option must be a bool.
base::Result<Assignment> assignmentFromPluginOption(const PluginOptionText& option, SourceKind kind,
                                                    std::string origin);

/// Reads CRIU_AMDGPU_* and the legacy KFD_* names from `env`. Unknown CRIU_AMDGPU_* names are
/// errors (with the nearest valid name); other variables are ignored. For each option the legacy
/// name comes before the CRIU_AMDGPU_* name, so the latter wins; its origin then says so.
base::Result<std::vector<Assignment>> readEnvironment(const Environment& env);

/// The process environment's CRIU_AMDGPU_* and KFD_* variables (the only read of environ in the
/// project).
Environment processEnvironment();

/// Reads criu plugin options: entries "amdgpu.NAME=VALUE", "amdgpu.NAME" (bool flags), also with
/// ':' for '.' and a leading "--". Every other entry (another plugin's, a program name, anything
/// not of the form PLUGIN.NAME) is ignored; only a bad amdgpu option is an error.
base::Result<std::vector<Assignment>> readPluginOptions(const std::vector<std::string>& argv);

/// Parses YAML text (a mapping of snake_case keys) read from `fileName` (used in origins).
base::Result<std::vector<Assignment>> parseYamlText(const std::string& text,
                                                    const std::string& fileName);

/// Reads a YAML file. A missing file is an error when `mustExist`, else an empty, not-present
/// result; any other read error is always an error, and so is a file others may write
/// (readTextFile).
base::Result<FileAssignments> readYamlFile(const std::string& path, bool mustExist);

/// Parses an options file in criu's config-file syntax read from `fileName`: one option per line,
/// '#' comments, quotes; only "plugin-opt"/"plugin-option" lines, for amdgpu (others ignored).
base::Result<std::vector<Assignment>> parseOptionsText(const std::string& text,
                                                       const std::string& fileName);

/// Reads an options file; a missing file as for readYamlFile.
base::Result<FileAssignments> readOptionsFile(const std::string& path, bool mustExist);

/// Largest configuration file (YAML or options file) read, in bytes.
inline constexpr size_t kMaxConfigFileBytes = 1 << 20;

/// Reads a whole file into `*text`. Returns false (no error) when it does not exist and
/// !mustExist; an error naming the file otherwise, also for anything but a regular file (a FIFO,
/// socket or device, refused before anything is opened for reading), for more than
/// kMaxConfigFileBytes, and for a file that fails base::openTrustedPath (not root's or the
/// caller's, or writable by others, or a directory or link on the way to it is): the error names
/// `option` ("config", "options-file"), the path and why. The file is read through the fd that
/// was judged. /dev/null reads as an empty file (and is not opened).
base::Result<bool> readTextFile(const std::string& path, bool mustExist, const char* what,
                                const char* option, std::string* text);

} // namespace config
