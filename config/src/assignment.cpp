#include "config/sources.h"

namespace config {
namespace {

// "set it with CRIU_AMDGPU_CONFIG or the plugin option amdgpu.config"
std::string allowedSourcesHint(const OptionSpec& spec) {
    std::vector<std::string> ways;
    if (spec.allows(SourceKind::Yaml))
        ways.push_back("the YAML key " + std::string(spec.yamlKey));
    if (spec.allows(SourceKind::OptionsFile))
        ways.push_back("the options file");
    if (spec.allows(SourceKind::Env))
        ways.push_back(std::string(spec.envName));
    if (spec.allows(SourceKind::PluginOption))
        ways.push_back("the plugin option amdgpu." + std::string(spec.name));
    std::string hint;
    for (size_t i = 0; i < ways.size(); ++i)
        hint += (i == 0 ? "" : i + 1 == ways.size() ? " or " : ", ") + ways[i];
    return hint;
}

base::Result<void> checkAllowed(const OptionSpec& spec, SourceKind kind,
                                const std::string& origin) {
    if (spec.allows(kind))
        return base::success();
    return base::makeError(base::ErrorCode::Config, "%s: '%s' cannot be set in %s; set it with %s",
                           origin.c_str(), std::string(spec.name).c_str(), sourceKindName(kind),
                           allowedSourcesHint(spec).c_str());
}

} // namespace

base::Result<Assignment> assignmentFromText(const OptionSpec& spec, SourceKind kind,
                                            std::string_view text, std::string origin) {
    HAL_TRY(checkAllowed(spec, kind, origin));
    auto value = parseValue(spec.type, text);
    // Name the option the way this source spells it.
    std::string_view label = kind == SourceKind::Yaml ? spec.yamlKey : spec.name;
    if (!value.ok())
        return base::makeError(base::ErrorCode::Config, "%s: %s: %s", origin.c_str(),
                               std::string(label).c_str(), value.error().message().c_str());
    return Assignment{&spec, std::move(value).value(), std::move(origin)};
}

base::Result<Assignment> assignmentFromBareFlag(const OptionSpec& spec, SourceKind kind,
                                                std::string origin) {
    HAL_TRY(checkAllowed(spec, kind, origin));
    if (spec.type != OptionType::Bool)
        return base::makeError(base::ErrorCode::Config, "%s: %s needs a value (%s=VALUE, a %s)",
                               origin.c_str(), std::string(spec.name).c_str(),
                               std::string(spec.name).c_str(), optionTypeName(spec.type));
    return Assignment{&spec, TypedValue(true), std::move(origin)};
}

} // namespace config
