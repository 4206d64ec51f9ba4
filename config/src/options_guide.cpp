#include "config/options_guide.h"

namespace config {
namespace {

// What an example shows as the value: the non-default for a bool, else the type in capitals.
std::string placeholder(const OptionSpec& spec) {
    switch (spec.type) {
    case OptionType::Bool:
        return spec.defaultText == "true" ? "false" : "true";
    case OptionType::Size:
        return "SIZE";
    case OptionType::Path:
        return "PATH";
    case OptionType::BackendList:
        return "BACKENDS";
    case OptionType::DeviceMap:
        return "MAP";
    case OptionType::LogLevel:
        return "LEVEL";
    case OptionType::CriuAbi:
        return "ABI";
    case OptionType::Compression:
        return "CODEC";
    case OptionType::Cipher:
        return "CIPHER";
    }
    return "VALUE";
}

} // namespace

std::string literalSpan(std::string_view text) {
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely) about "`" + std::string.
    std::string span = "`";
    span.append(text);
    span += '`';
    return span;
}

std::string optionEnvironmentNames(const OptionSpec& spec) {
    std::string names = literalSpan(spec.envName);
    if (!spec.legacyEnv.empty())
        names += ", " + literalSpan(spec.legacyEnv);
    return names;
}

std::vector<OptionSpelling> optionSpellings(const OptionSpec& spec) {
    std::string name(spec.name), example = placeholder(spec);
    std::vector<OptionSpelling> spellings;
    if (spec.allows(SourceKind::Yaml))
        spellings.push_back({"YAML", literalSpan(std::string(spec.yamlKey) + ": " + example)});
    if (spec.allows(SourceKind::OptionsFile))
        spellings.push_back(
            {"Options file", literalSpan("plugin-opt amdgpu:" + name + "=" + example)});
    if (spec.allows(SourceKind::Env))
        spellings.push_back({"Environment", optionEnvironmentNames(spec)});
    if (spec.allows(SourceKind::PluginOption))
        spellings.push_back(
            {"Plugin option", literalSpan("--plugin-option amdgpu." + name + "=" + example)});
    std::string notIn;
    for (SourceKind kind :
         {SourceKind::Yaml, SourceKind::OptionsFile, SourceKind::Env, SourceKind::PluginOption})
        if (!spec.allows(kind))
            notIn += std::string(notIn.empty() ? "" : " or ") + sourceKindName(kind);
    if (!notIn.empty())
        spellings.push_back({"", "Cannot be set in " + notIn + "."});
    return spellings;
}

DocSection optionSourcesSection() {
    using enum DocBlock::Kind;
    return {
        "Where options come from",
        {
            {Paragraph, "Each source overrides the ones before it:"},
            {NumberedItem, "Built-in defaults."},
            {NumberedItem,
             "The YAML file: `/etc/criu/amdgpu.yaml`, or the file named by `CRIU_AMDGPU_CONFIG` "
             "or the plugin option `amdgpu.config`. A mapping of the snake_case keys below, e.g. "
             "`numa_check: false`. A missing default file is fine; a named file that is missing "
             "is an error. A key set twice is an error."},
            {NumberedItem,
             "The options file, in criu's config-file syntax: `/etc/criu/amdgpu.conf`, or the "
             "file named by `CRIU_AMDGPU_OPTIONS_FILE`, the plugin option `amdgpu.options-file` "
             "or the YAML key `options_file`. One option per line, `#` comments, quotes as in "
             "criu. Lines are `plugin-opt amdgpu:NAME[=VALUE]`; also accepted: `plugin-option` "
             "for `plugin-opt`, a leading `--`, `=` between `plugin-opt` and its argument, and "
             "`.` for `:` (`--plugin-opt=amdgpu.numa-check=0`). A bool option without a value "
             "means true (`plugin-opt amdgpu:force-single-gpu-restore`). Lines for other plugins "
             "are ignored; any other criu option is an error. A later line wins."},
            {NumberedItem,
             "The environment: `CRIU_AMDGPU_` + the option name in UPPER_SNAKE, and the `KFD_*` "
             "names criu's own amdgpu plugin reads. When both are set the `CRIU_AMDGPU_*` one "
             "wins. An unknown `CRIU_AMDGPU_*` variable is an error; other variables are "
             "ignored."},
            {NumberedItem,
             "criu's plugin options, when the running criu offers them: "
             "`--plugin-option amdgpu.NAME=VALUE` (`amdgpu.NAME` alone for a true bool). Options "
             "for other plugins are ignored. A later option wins."},
            {Paragraph,
             "A later source replaces a list (`backend`, `device-map`) as a whole. Bad input "
             "(an unknown name, a value of the wrong type, a bad size suffix, a GPU named twice in "
             "a device map, YAML syntax) is an error naming the source and the nearest valid name "
             "or the accepted values; nothing is silently defaulted. The plugin names `amdgpu` "
             "and `amdgpu_plugin` both mean this plugin."},
            {Paragraph, "`criu-amdgpu config show [--json]` prints every option's effective value "
                        "and where it came from."},
        },
    };
}

DocSection backendPreferenceSection() {
    using enum DocBlock::Kind;
    return {
        "Backend preference",
        {
            {Paragraph,
             "An explicit `backend` list is tried in the order given. With `auto` the order is "
             "`kfd`, `amdgpu-drm`; naming a mock root (`mock-root`) asks for the mock backend, "
             "which then comes first: `mock`, `kfd`, `amdgpu-drm`. The mock backend is never "
             "chosen unless asked for. The backend registry tries the backends in this order and "
             "reports the ones that are missing or not present."},
        },
    };
}

} // namespace config
