#include "config/config.h"
#include "config/sources.h"

#include "base/trusted_path.h"

#include <cerrno>
#include <sys/stat.h>

namespace config {

using settings::Settings;

namespace {

// The assignment of the highest-precedence source for `option` among the listed assignments,
// which are in increasing precedence; nullptr when none sets it.
const Assignment* lastAssignment(std::string_view option,
                                 std::initializer_list<const std::vector<Assignment>*> lists) {
    const Assignment* last = nullptr;
    for (const auto* list : lists)
        for (const Assignment& a : *list)
            if (a.spec->name == option)
                last = &a;
    return last;
}

// "the YAML file named by env CRIU_AMDGPU_CONFIG" or "the default YAML file".
std::string fileRole(const char* kind, const Assignment* namer) {
    return namer ? std::string("the ") + kind + " file named by " + namer->origin
                 : std::string("the default ") + kind + " file";
}

std::optional<std::string> pathOf(const Assignment* a) {
    return a ? std::optional<std::string>(std::get<std::string>(a->value)) : std::nullopt;
}

// backend-dir names code the plugin loads, mock-root the machine the mock backend drives,
// kfd-driver the machine the kfd backend drives in tests: like
// the files, they are taken only from directories root (or the caller) owns and no one else may
// write. A path that does not exist holds nothing to load and is not refused here; the registry
// and the mock backend check again right before they use a path.
base::Result<void> checkTrustedDirectories(const Settings& settings,
                                           const std::vector<std::string>& origins) {
    const auto& table = optionTable();
    for (const auto& [name, path] :
         {std::pair<const char*, const std::string&>{"backend-dir", settings.backendDir},
          {"mock-root", settings.mockRoot},
          {"kfd-driver", settings.kfdDriver}}) {
        struct stat st {};
        if (path.empty() || (stat(path.c_str(), &st) != 0 && errno == ENOENT))
            continue;
        const OptionSpec* spec = findOption(name);
        HAL_TRY_CONTEXT(base::checkTrustedPath(path, name, base::TrustedKind::Directory),
                        "%s is set by %s", name, origins[spec - table.data()].c_str());
    }
    return base::success();
}

} // namespace

const EffectiveOption* LoadedConfig::find(std::string_view name) const {
    for (const EffectiveOption& option : options)
        if (option.name == name)
            return &option;
    return nullptr;
}

base::Result<LoadedConfig> loadConfig(const Sources& sources) {
    Environment env = sources.env ? *sources.env : processEnvironment();
    HAL_TRY_ASSIGN(auto envAssignments, readEnvironment(env));
    HAL_TRY_ASSIGN(auto pluginAssignments, readPluginOptions(sources.pluginOptions));

    LoadedConfig loaded;
    const Assignment* yamlNamer = lastAssignment("config", {&envAssignments, &pluginAssignments});
    std::optional<std::string> namedYaml = pathOf(yamlNamer);
    loaded.yamlPath = namedYaml.value_or(sources.defaultYamlPath);
    FileAssignments yaml;
    if (!loaded.yamlPath.empty()) {
        HAL_TRY_ASSIGN_CONTEXT(yaml, readYamlFile(loaded.yamlPath, namedYaml.has_value()),
                               "while loading %s", fileRole("YAML", yamlNamer).c_str());
    }
    loaded.yamlPresent = yaml.present;

    const Assignment* optionsNamer =
        lastAssignment("options-file", {&yaml.entries, &envAssignments, &pluginAssignments});
    std::optional<std::string> namedOptions = pathOf(optionsNamer);
    loaded.optionsPath = namedOptions.value_or(sources.defaultOptionsPath);
    FileAssignments optionsFile;
    if (!loaded.optionsPath.empty()) {
        HAL_TRY_ASSIGN_CONTEXT(optionsFile,
                               readOptionsFile(loaded.optionsPath, namedOptions.has_value()),
                               "while loading %s", fileRole("options", optionsNamer).c_str());
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

    HAL_TRY(checkTrustedDirectories(target.settings, origins));
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

base::Result<Settings> loadSettings(const Sources& sources) {
    HAL_TRY_ASSIGN(auto loaded, loadConfig(sources));
    return std::move(loaded.settings);
}

} // namespace config
