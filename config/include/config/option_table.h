#pragma once
/// \file
/// The one table of options. Every option has one entry: its name (kebab-case, as plugin options
/// and the options file spell it), its YAML key, its environment names, its default, its help
/// text, the sources that may set it and the field it fills. Parsing, validation, `config show`,
/// `config help` and docs/options.md all come from this table.

#include "config/value_parsers.h"
#include "settings/settings.h"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace config {

using settings::DeviceMapEntry;
using settings::Settings;

/// Where a setting can come from, lowest precedence first (the default is below all of them).
enum class SourceKind : unsigned {
    Yaml = 1u << 0,        ///< the YAML file (/etc/criu/amdgpu.yaml or CRIU_AMDGPU_CONFIG)
    OptionsFile = 1u << 1, ///< the options file in criu's config-file syntax
    Env = 1u << 2,         ///< CRIU_AMDGPU_* and legacy KFD_* environment variables
    PluginOption = 1u << 3 ///< criu's --plugin-option amdgpu.NAME=VALUE
};

/// A set of SourceKind bits.
using SourceMask = unsigned;
/// Every source.
inline constexpr SourceMask kAllSources = 0xf;
/// The bit of one source kind.
constexpr SourceMask sourceBit(SourceKind kind) {
    return static_cast<SourceMask>(kind);
}
/// Human name of a source kind ("YAML file", "options file", "environment", "plugin option").
const char* sourceKindName(SourceKind kind);

/// Everything the table fills: the Settings handed to every layer, and the two file paths that
/// only steer loading.
struct OptionTarget {
    Settings settings;
    /// The YAML file read (or to read); empty = none.
    std::string configPath;
    /// The options file read (or to read); empty = none.
    std::string optionsFile;
};

/// Returns a reference to the field of an OptionTarget that an option fills; its type is the one
/// parseValue gives for the option's OptionType.
using OptionBinding =
    std::variant<bool& (*)(OptionTarget&), uint64_t& (*)(OptionTarget&),
                 std::string& (*)(OptionTarget&), std::vector<std::string>& (*)(OptionTarget&),
                 std::vector<DeviceMapEntry>& (*)(OptionTarget&), int& (*)(OptionTarget&)>;

/// One row of the option table.
struct OptionSpec {
    std::string_view name;        ///< kebab-case: plugin options and the options file
    OptionType type;              ///< the value syntax
    std::string_view yamlKey;     ///< snake_case key in the YAML file
    std::string_view envName;     ///< CRIU_AMDGPU_UPPER_SNAKE
    std::string_view legacyEnv;   ///< the KFD_* name criu's own plugin reads, or empty
    std::string_view defaultText; ///< the default, as `config show` prints it
    std::string_view help;        ///< one paragraph for `config help` and docs/options.md
    SourceMask sources;           ///< sources allowed to set it
    OptionBinding binding;        ///< the field it fills

    /// Whether `kind` may set this option.
    bool allows(SourceKind kind) const { return (sources & sourceBit(kind)) != 0; }
};

/// The table, in documentation order.
const std::vector<OptionSpec>& optionTable();

/// The entry with this kebab-case name, or nullptr.
const OptionSpec* findOption(std::string_view name);
/// The entry with this YAML key, or nullptr.
const OptionSpec* findOptionByYamlKey(std::string_view key);
/// The entry with this CRIU_AMDGPU_* name, or nullptr (legacy KFD_* names are not matched).
const OptionSpec* findOptionByEnvName(std::string_view envName);
/// The entry whose legacy KFD_* name this is, or nullptr.
const OptionSpec* findOptionByLegacyEnv(std::string_view envName);

/// All names (kebab-case), YAML keys or CRIU_AMDGPU_* names, for suggestions.
std::vector<std::string> optionNames();
/// All YAML keys.
std::vector<std::string> optionYamlKeys();
/// All CRIU_AMDGPU_* environment names.
std::vector<std::string> optionEnvNames();

/// Stores a parsed value into the option's field. The value's alternative must be the option's
/// type (values from parseValue(spec.type(), ...) always are).
void assignOption(const OptionSpec& spec, OptionTarget& target, TypedValue value);
/// The option's current value in `target`, typed.
TypedValue readOption(const OptionSpec& spec, const OptionTarget& target);

/// The targets' defaults for given default file paths (the Settings defaults otherwise).
OptionTarget defaultTarget(std::string defaultYamlPath, std::string defaultOptionsPath);

} // namespace config
