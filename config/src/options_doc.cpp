#include "config/config.h"
#include "config/option_table.h"

namespace config {
namespace {

std::string code(std::string_view text) {
    return text.empty() ? std::string("(empty)") : "`" + std::string(text) + "`";
}

std::string environmentNames(const OptionSpec& spec) {
    std::string names = code(spec.envName);
    if (!spec.legacyEnv.empty())
        names += ", " + code(spec.legacyEnv);
    return names;
}

// What an example line shows as the value: the non-default for a bool, else the type's name.
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
    }
    return "VALUE";
}

void appendSources(std::string& out) {
    out += "## Where options come from\n\n"
           "Each source overrides the ones before it:\n\n"
           "1. Built-in defaults.\n"
           "2. The YAML file: `/etc/criu/amdgpu.yaml`, or the file named by `CRIU_AMDGPU_CONFIG` "
           "or the plugin option `amdgpu.config`. A mapping of the snake_case keys below, e.g. "
           "`numa_check: false`. A missing default file is fine; a named file that is missing "
           "is an error. A key set twice is an error.\n"
           "3. The options file, in criu's config-file syntax: `/etc/criu/amdgpu.conf`, or the "
           "file named by `CRIU_AMDGPU_OPTIONS_FILE`, the plugin option `amdgpu.options-file` "
           "or the YAML key `options_file`. One option per line, `#` comments, quotes as in "
           "criu. Lines are `plugin-opt amdgpu:NAME[=VALUE]`; also accepted: `plugin-option` "
           "for `plugin-opt`, a leading `--`, `=` between `plugin-opt` and its argument, and "
           "`.` for `:` (`--plugin-opt=amdgpu.numa-check=0`). A bool option without a value "
           "means true (`plugin-opt amdgpu:force-single-gpu-restore`). Lines for other plugins "
           "are ignored; any other criu option is an error. A later line wins.\n"
           "4. The environment: `CRIU_AMDGPU_` + the option name in UPPER_SNAKE, and the `KFD_*` "
           "names criu's own amdgpu plugin reads. When both are set the `CRIU_AMDGPU_*` one "
           "wins. An unknown `CRIU_AMDGPU_*` variable is an error; other variables are "
           "ignored.\n"
           "5. criu's plugin options, when the running criu offers them: "
           "`--plugin-option amdgpu.NAME=VALUE` (`amdgpu.NAME` alone for a true bool). Options "
           "for other plugins are ignored. A later option wins.\n\n"
           "A later source replaces a list (`backend`, `device-map`) as a whole. Bad input "
           "(an unknown name, a value of the wrong type, a bad size suffix, a GPU named twice in "
           "a device map, YAML syntax) is an error naming the source and the nearest valid name "
           "or the accepted values; nothing is silently defaulted. The plugin names `amdgpu` "
           "and `amdgpu_plugin` both mean this plugin.\n\n"
           "`criu-amdgpu config show [--json]` prints every option's effective value and where "
           "it came from.\n\n";
}

void appendSummary(std::string& out) {
    out += "## Summary\n\n"
           "| Option | Type | Default | YAML key | Environment |\n"
           "|---|---|---|---|---|\n";
    for (const OptionSpec& spec : optionTable())
        out += "| [`" + std::string(spec.name) + "`](#" + std::string(spec.name) + ") | " +
               optionTypeName(spec.type) + " | " + code(spec.defaultText) + " | " +
               code(spec.yamlKey) + " | " + environmentNames(spec) + " |\n";
    out += "\n";
}

void appendOption(std::string& out, const OptionSpec& spec) {
    std::string name(spec.name);
    std::string example = placeholder(spec);
    out += "### " + name + "\n\n" + std::string(spec.help) + "\n\n";
    out += "- Type: " + std::string(optionTypeName(spec.type)) + "\n";
    out += "- Default: " + code(spec.defaultText) + "\n";
    if (spec.allows(SourceKind::Yaml))
        out += "- YAML: `" + std::string(spec.yamlKey) + ": " + example + "`\n";
    if (spec.allows(SourceKind::OptionsFile))
        out += "- Options file: `plugin-opt amdgpu:" + name + "=" + example + "`\n";
    if (spec.allows(SourceKind::Env))
        out += "- Environment: " + environmentNames(spec) + "\n";
    if (spec.allows(SourceKind::PluginOption))
        out += "- Plugin option: `--plugin-option amdgpu." + name + "=" + example + "`\n";
    std::string notIn;
    for (SourceKind kind :
         {SourceKind::Yaml, SourceKind::OptionsFile, SourceKind::Env, SourceKind::PluginOption})
        if (!spec.allows(kind))
            notIn += std::string(notIn.empty() ? "" : " or ") + sourceKindName(kind);
    if (!notIn.empty())
        out += "- Cannot be set in " + notIn + ".\n";
    out += "\n";
}

void appendTypes(std::string& out) {
    out += "## Value types\n\n";
    for (OptionType type :
         {OptionType::Bool, OptionType::Size, OptionType::Path, OptionType::BackendList,
          OptionType::DeviceMap, OptionType::LogLevel, OptionType::CriuAbi})
        out += "- **" + std::string(optionTypeName(type)) + "**: " + optionTypeSyntax(type) + "\n";
    out += "\n";
}

void appendBackendPreference(std::string& out) {
    out += "## Backend preference\n\n"
           "An explicit `backend` list is tried in the order given. With `auto` the order is "
           "`kfd`, `amdgpu-drm`; naming a mock root (`mock-root`) asks for the mock backend, "
           "which then comes first: `mock`, `kfd`, `amdgpu-drm`. The mock backend is never "
           "chosen unless asked for. The backend registry tries the backends in this order and "
           "reports the ones that are missing or not present.\n";
}

} // namespace

std::string optionsMarkdown() {
    std::string out = "# criu-amdgpu options\n\n"
                      "<!-- Generated from the option table (config/src/option_table.cpp) by "
                      "`criu-amdgpu config help`; do not edit by hand. -->\n\n";
    appendSources(out);
    appendSummary(out);
    out += "## Options\n\n";
    for (const OptionSpec& spec : optionTable())
        appendOption(out, spec);
    appendTypes(out);
    appendBackendPreference(out);
    return out;
}

} // namespace config
