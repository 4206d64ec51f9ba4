#include "config/sources.h"
#include "config/suggestions.h"

namespace config {

bool splitPluginOption(std::string_view text, PluginOptionText* out) {
    size_t eq = text.find('=');
    std::string_view key = text.substr(0, eq);
    size_t sep = key.find_first_of(".:");
    if (sep == std::string_view::npos || sep == 0 || sep + 1 == key.size())
        return false;
    out->plugin = std::string(key.substr(0, sep));
    out->name = std::string(key.substr(sep + 1));
    out->hasValue = eq != std::string_view::npos;
    out->value = out->hasValue ? std::string(text.substr(eq + 1)) : std::string();
    return true;
}

bool isAmdgpuPlugin(std::string_view plugin) {
    return plugin == "amdgpu" || plugin == "amdgpu_plugin";
}

base::Result<Assignment> assignmentFromPluginOption(const PluginOptionText& option, SourceKind kind,
                                                    std::string origin) {
    const OptionSpec* spec = findOption(option.name);
    if (!spec)
        return base::makeError(base::ErrorCode::Config, "%s: %s", origin.c_str(),
                               unknownNameMessage("option", option.name, optionNames()).c_str());
    if (!option.hasValue)
        return assignmentFromBareFlag(*spec, kind, std::move(origin));
    return assignmentFromText(*spec, kind, option.value, std::move(origin));
}

base::Result<std::vector<Assignment>> readPluginOptions(const std::vector<std::string>& argv) {
    // Every plugin sees every plugin's options: whatever is not an amdgpu option, whatever its
    // shape, belongs to someone else and is left alone.
    std::vector<Assignment> assignments;
    for (const std::string& entry : argv) {
        std::string_view text = entry;
        if (text.substr(0, 2) == "--")
            text.remove_prefix(2);
        PluginOptionText option;
        if (!splitPluginOption(text, &option) || !isAmdgpuPlugin(option.plugin))
            continue;
        std::string origin = "plugin option " + std::string(text.substr(0, text.find('=')));
        HAL_TRY_ASSIGN(auto a,
                       assignmentFromPluginOption(option, SourceKind::PluginOption, origin));
        assignments.push_back(std::move(a));
    }
    return assignments;
}

} // namespace config
