#pragma once
/// \file
/// Loading the configuration: built-in defaults, then the YAML file, then the options file, then
/// the environment, then criu's plugin options; each source overrides the ones before it. The
/// result is the typed Settings every layer is handed, plus for `config show` each option's
/// effective value and where it came from. config/ is the only code that reads the environment.

#include "base/result.h"
#include "settings/settings.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace config {

using settings::Settings;

/// Where loadConfig reads from.
struct Sources {
    /// The environment; nullopt reads the process environment at load time.
    std::optional<std::map<std::string, std::string>> env;
    /// criu's plugin options (criu_plugin_get_options), e.g. "amdgpu.numa-check=0"; entries for
    /// other plugins are ignored.
    std::vector<std::string> pluginOptions;
    /// The YAML file read when neither CRIU_AMDGPU_CONFIG nor the plugin option `config` names
    /// one; its absence is not an error.
    std::string defaultYamlPath = "/etc/criu/amdgpu.yaml";
    /// The options file read when nothing names one; its absence is not an error.
    std::string defaultOptionsPath = "/etc/criu/amdgpu.conf";

    /// Sources with `env` holding a snapshot of the process environment's CRIU_AMDGPU_* and KFD_*
    /// variables, and no plugin options.
    static Sources fromProcessEnvironment();
};

/// One option's effective value, for `config show`.
struct EffectiveOption {
    std::string name;  ///< kebab-case option name
    std::string value; ///< canonical text of the effective value
    /// "default", "/etc/criu/amdgpu.yaml:12", "/etc/criu/amdgpu.conf:3", "env KFD_NUMA_CHECK",
    /// "env CRIU_AMDGPU_NUMA_CHECK (overrides KFD_NUMA_CHECK)",
    /// "plugin option amdgpu.numa-check"; a default file that does not exist shows as
    /// "default (file not present)".
    std::string origin;
};

/// The loaded configuration.
struct LoadedConfig {
    Settings settings;                    ///< the typed settings
    std::vector<EffectiveOption> options; ///< one per option, in option-table order
    std::string yamlPath;                 ///< the YAML file considered ("" = none)
    bool yamlPresent = false;             ///< whether it existed and was read
    std::string optionsPath;              ///< the options file considered ("" = none)
    bool optionsPresent = false;          ///< whether it existed and was read

    /// The entry of an option by kebab-case name, or nullptr.
    const EffectiveOption* find(std::string_view name) const;
};

/// Loads every source. Any bad input (unknown key or variable, a value of the wrong type, a bad
/// size suffix, a repeated GPU in the device map, YAML syntax, a named file that is missing) is an
/// base::Error with ErrorCode::Config naming the source (file:line, environment variable or plugin
/// option) and the nearest valid name or the accepted values. Never throws.
base::Result<LoadedConfig> loadConfig(const Sources& sources);

/// loadConfig(sources).settings.
base::Result<Settings> loadSettings(const Sources& sources = {});

/// `config show` as a human-readable table: name, value, origin; one line per option.
std::string formatShowTable(const LoadedConfig& config);
/// `config show --json`: one JSON object on one line, {"options":[{"name":..,"value":..,
/// "origin":..},...]}: every option in the table's order, each with three strings in this order.
std::string formatShowJson(const LoadedConfig& config);
/// The options documentation (markdown) generated from the option table: `config help` prints
/// it and docs/options.md is exactly this text.
std::string optionsMarkdown();

} // namespace config
