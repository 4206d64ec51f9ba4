#include "config/config.h"
#include "config/sources.h"

namespace config {
namespace {

// The path the highest-precedence source gives for `option` among the listed assignments, which
// are in increasing precedence; nullopt when none sets it.
std::optional<std::string> lastPath(std::string_view option,
                                    std::initializer_list<const std::vector<Assignment>*> lists) {
    std::optional<std::string> path;
    for (const auto* list : lists)
        for (const Assignment& a : *list)
            if (a.spec->name == option)
                path = std::get<std::string>(a.value);
    return path;
}

} // namespace

const EffectiveOption* LoadedConfig::find(std::string_view name) const {
    for (const EffectiveOption& option : options)
        if (option.name == name)
            return &option;
    return nullptr;
}

hal::Result<LoadedConfig> loadConfig(const Sources& sources) {
    Environment env = sources.env ? *sources.env : processEnvironment();
    HAL_TRY_ASSIGN(auto envAssignments, readEnvironment(env));
    HAL_TRY_ASSIGN(auto pluginAssignments, readPluginOptions(sources.pluginOptions));

    LoadedConfig loaded;
    std::optional<std::string> namedYaml =
        lastPath("config", {&envAssignments, &pluginAssignments});
    loaded.yamlPath = namedYaml.value_or(sources.defaultYamlPath);
    FileAssignments yaml;
    if (!loaded.yamlPath.empty()) {
        HAL_TRY_ASSIGN(yaml, readYamlFile(loaded.yamlPath, namedYaml.has_value()));
    }
    loaded.yamlPresent = yaml.present;

    std::optional<std::string> namedOptions =
        lastPath("options-file", {&yaml.entries, &envAssignments, &pluginAssignments});
    loaded.optionsPath = namedOptions.value_or(sources.defaultOptionsPath);
    FileAssignments optionsFile;
    if (!loaded.optionsPath.empty()) {
        HAL_TRY_ASSIGN(optionsFile, readOptionsFile(loaded.optionsPath, namedOptions.has_value()));
    }
    loaded.optionsPresent = optionsFile.present;

    const auto& table = optionTable();
    OptionTarget target = defaultTarget(sources.defaultYamlPath, sources.defaultOptionsPath);
    std::vector<std::string> origins(table.size(), "default");
    for (const auto* list :
         {&yaml.entries, &optionsFile.entries, &envAssignments, &pluginAssignments}) {
        for (const Assignment& a : *list) {
            assignOption(*a.spec, target, a.value);
            origins[a.spec - table.data()] = a.origin;
        }
    }

    loaded.settings = target.settings;
    for (size_t i = 0; i < table.size(); ++i) {
        const OptionSpec& spec = table[i];
        std::string origin = origins[i];
        if ((spec.name == "config" && !namedYaml && !loaded.yamlPath.empty() &&
             !loaded.yamlPresent) ||
            (spec.name == "options-file" && !namedOptions && !loaded.optionsPath.empty() &&
             !loaded.optionsPresent))
            origin += " (file not present)";
        loaded.options.push_back(
            EffectiveOption{std::string(spec.name), formatValue(readOption(spec, target)), origin});
    }
    return loaded;
}

hal::Result<Settings> loadSettings(const Sources& sources) {
    HAL_TRY_ASSIGN(auto loaded, loadConfig(sources));
    return std::move(loaded.settings);
}

} // namespace config
