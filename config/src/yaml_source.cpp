#include "config/sources.h"
#include "config/suggestions.h"
#include "yaml_screen.h"

#include <set>
#include <yaml-cpp/yaml.h>

namespace config {

using settings::DeviceMapEntry;

namespace {

std::string at(const std::string& file, const YAML::Mark& mark) {
    return mark.is_null() ? file : file + ":" + std::to_string(mark.line + 1);
}

base::Error yamlError(const std::string& where, const std::string& message) {
    return base::makeError(base::ErrorCode::Config, "%s: %s", where.c_str(), message.c_str());
}

// Prefixes a value parser's error with the location and the key.
base::Error valueError(const std::string& where, const OptionSpec& spec, const base::Error& e) {
    return yamlError(where, std::string(spec.yamlKey) + ": " + e.message());
}

const char* nodeKind(const YAML::Node& node) {
    if (node.IsSequence())
        return "a sequence";
    if (node.IsMap())
        return "a mapping";
    if (node.IsNull())
        return "no value";
    return "a scalar";
}

base::Result<TypedValue> backendListFromSequence(const std::string& file, const OptionSpec& spec,
                                                 const YAML::Node& node) {
    BackendListBuilder names;
    if (node.size() == 0)
        return yamlError(at(file, node.Mark()), std::string(spec.yamlKey) +
                                                    ": empty backend list (write 'auto' for the "
                                                    "best backend present)");
    for (const YAML::Node& item : node) {
        std::string where = at(file, item.Mark());
        if (!item.IsScalar())
            return yamlError(where, std::string(spec.yamlKey) + ": expected a backend name, got " +
                                        nodeKind(item));
        auto added = names.add(item.Scalar());
        if (!added.ok())
            return valueError(where, spec, added.error());
    }
    return TypedValue(names.take());
}

// Adds one SRC/DST pair found at `where` to `map`.
base::Result<void> addPair(const std::string& where, const OptionSpec& spec, DeviceMapBuilder& map,
                           const YAML::Node& src, const YAML::Node& dst) {
    if (!src.IsScalar() || !dst.IsScalar())
        return yamlError(where, std::string(spec.yamlKey) +
                                    ": a source and a destination must be scalars");
    auto entry = parseDeviceMapEntry(src.Scalar(), dst.Scalar());
    if (!entry.ok())
        return valueError(where, spec, entry.error());
    auto added = map.add(*entry);
    if (!added.ok())
        return valueError(where, spec, added.error());
    return base::success();
}

base::Result<TypedValue> deviceMapFromNode(const std::string& file, const OptionSpec& spec,
                                           const YAML::Node& node) {
    DeviceMapBuilder map;
    if (node.IsMap()) {
        for (const auto& pair : node)
            HAL_TRY(addPair(at(file, pair.first.Mark()), spec, map, pair.first, pair.second));
        return TypedValue(map.take());
    }
    for (const YAML::Node& item : node) {
        std::string where = at(file, item.Mark());
        if (item.IsScalar()) {
            auto entries = parseDeviceMap(item.Scalar());
            if (!entries.ok())
                return valueError(where, spec, entries.error());
            for (const DeviceMapEntry& e : *entries) {
                auto added = map.add(e);
                if (!added.ok())
                    return valueError(where, spec, added.error());
            }
        } else if (item.IsMap()) {
            YAML::Node src, dst;
            for (const auto& field : item) {
                std::string key = field.first.IsScalar() ? field.first.Scalar() : "";
                if (key == "src")
                    src = field.second;
                else if (key == "dst")
                    dst = field.second;
                else
                    return yamlError(
                        at(file, field.first.Mark()),
                        std::string(spec.yamlKey) + ": " +
                            unknownNameMessage("device map field", key, {"src", "dst"}));
            }
            if (!src || !dst)
                return yamlError(where, std::string(spec.yamlKey) +
                                            ": a device map entry needs both src and dst");
            HAL_TRY(addPair(where, spec, map, src, dst));
        } else {
            return yamlError(where, std::string(spec.yamlKey) +
                                        ": expected 'SRC=DST' or {src: .., dst: ..}, got " +
                                        nodeKind(item));
        }
    }
    return TypedValue(map.take());
}

base::Result<Assignment> assignmentFromNode(const std::string& file, const OptionSpec& spec,
                                            const YAML::Node& key, const YAML::Node& value) {
    std::string where = at(file, key.Mark());
    if (value.IsScalar())
        return assignmentFromText(spec, SourceKind::Yaml, value.Scalar(), where);
    if (!spec.allows(SourceKind::Yaml))
        return assignmentFromText(spec, SourceKind::Yaml, "", where); // reports the source
    if (value.IsSequence() && spec.type == OptionType::BackendList) {
        HAL_TRY_ASSIGN(auto v, backendListFromSequence(file, spec, value));
        return Assignment{&spec, std::move(v), where};
    }
    if ((value.IsSequence() || value.IsMap()) && spec.type == OptionType::DeviceMap) {
        HAL_TRY_ASSIGN(auto v, deviceMapFromNode(file, spec, value));
        return Assignment{&spec, std::move(v), where};
    }
    return yamlError(where, std::string(spec.yamlKey) + ": expected a " +
                                optionTypeName(spec.type) + ", got " + nodeKind(value) + " (" +
                                optionTypeSyntax(spec.type) + ")");
}

base::Result<std::vector<Assignment>> assignmentsFromDocument(const std::string& file,
                                                              const YAML::Node& root) {
    std::vector<Assignment> assignments;
    if (!root || root.IsNull())
        return assignments;
    if (!root.IsMap())
        return yamlError(at(file, root.Mark()),
                         std::string("expected a mapping of option keys (such as 'numa_check: "
                                     "false'), got ") +
                             nodeKind(root));
    std::set<std::string> seen;
    for (const auto& pair : root) {
        std::string where = at(file, pair.first.Mark());
        if (!pair.first.IsScalar())
            return yamlError(where, "an option key must be a scalar");
        std::string key = pair.first.Scalar();
        const OptionSpec* spec = findOptionByYamlKey(key);
        if (!spec)
            return yamlError(where, unknownNameMessage("key", key, optionYamlKeys()));
        if (!seen.insert(key).second)
            return yamlError(where, "key '" + key + "' is set twice");
        HAL_TRY_ASSIGN(auto a, assignmentFromNode(file, *spec, pair.first, pair.second));
        assignments.push_back(std::move(a));
    }
    return assignments;
}

} // namespace

base::Result<std::vector<Assignment>> parseYamlText(const std::string& text,
                                                    const std::string& fileName) {
    // yaml-cpp is never handed a text it could loop on: the screen runs its parser first.
    HAL_TRY_ASSIGN(YamlScreen screen, screenYaml(text, fileName));
    if (screen.documents > 1)
        return yamlError(fileName + ":" + std::to_string(screen.secondDocumentLine + 1),
                         "more than one YAML document; put every option in one mapping");
    if (screen.documents == 0)
        return std::vector<Assignment>{};
    // yaml-cpp reports through exceptions; none may leave config/.
    try {
        return assignmentsFromDocument(fileName, YAML::Load(text));
    } catch (const YAML::Exception& e) {
        return yamlError(at(fileName, e.mark), "YAML syntax error: " + e.msg);
    } catch (const std::exception& e) {
        return yamlError(fileName, std::string("cannot parse YAML: ") + e.what());
    }
}

base::Result<FileAssignments> readYamlFile(const std::string& path, bool mustExist) {
    FileAssignments result;
    std::string text;
    HAL_TRY_ASSIGN(result.present, readTextFile(path, mustExist, "YAML file", "config", &text));
    if (result.present) {
        HAL_TRY_ASSIGN(result.entries, parseYamlText(text, path));
    }
    return result;
}

} // namespace config
