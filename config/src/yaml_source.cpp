#include "config/sources.h"
#include "config/suggestions.h"
#include "yaml_tree.h"

#include <set>

namespace config {

using settings::DeviceMapEntry;

namespace {

using Kind = YamlTree::Kind;

std::string at(const std::string& file, const YamlTree& node) {
    return node.line < 0 ? file : file + ":" + std::to_string(node.line + 1);
}

base::Error yamlError(const std::string& where, const std::string& message) {
    return base::makeError(base::ErrorCode::Config, "%s: %s", where.c_str(), message.c_str());
}

// Prefixes a value parser's error with the location and the key.
base::Error valueError(const std::string& where, const OptionSpec& spec, const base::Error& e) {
    return yamlError(where, std::string(spec.yamlKey) + ": " + e.message());
}

const char* nodeKind(const YamlTree& node) {
    switch (node.kind) {
    case Kind::Sequence:
        return "a sequence";
    case Kind::Map:
        return "a mapping";
    case Kind::Null:
        return "no value";
    case Kind::Scalar:
        break;
    }
    return "a scalar";
}

base::Result<TypedValue> backendListFromSequence(const std::string& file, const OptionSpec& spec,
                                                 const YamlTree& node) {
    BackendListBuilder names;
    if (node.items.empty())
        return yamlError(at(file, node), std::string(spec.yamlKey) +
                                             ": empty backend list (write 'auto' for the "
                                             "best backend present)");
    for (const YamlTree& item : node.items) {
        std::string where = at(file, item);
        if (item.kind != Kind::Scalar)
            return yamlError(where, std::string(spec.yamlKey) + ": expected a backend name, got " +
                                        nodeKind(item));
        auto added = names.add(item.scalar);
        if (!added.ok())
            return valueError(where, spec, added.error());
    }
    return TypedValue(names.take());
}

// Adds one SRC/DST pair found at `where` to `map`.
base::Result<void> addPair(const std::string& where, const OptionSpec& spec, DeviceMapBuilder& map,
                           const YamlTree& src, const YamlTree& dst) {
    if (src.kind != Kind::Scalar || dst.kind != Kind::Scalar)
        return yamlError(where, std::string(spec.yamlKey) +
                                    ": a source and a destination must be scalars");
    auto entry = parseDeviceMapEntry(src.scalar, dst.scalar);
    if (!entry.ok())
        return valueError(where, spec, entry.error());
    auto added = map.add(*entry);
    if (!added.ok())
        return valueError(where, spec, added.error());
    return base::success();
}

base::Result<TypedValue> deviceMapFromNode(const std::string& file, const OptionSpec& spec,
                                           const YamlTree& node) {
    DeviceMapBuilder map;
    if (node.kind == Kind::Map) {
        for (const auto& pair : node.pairs)
            HAL_TRY(addPair(at(file, pair.first), spec, map, pair.first, pair.second));
        return TypedValue(map.take());
    }
    for (const YamlTree& item : node.items) {
        std::string where = at(file, item);
        if (item.kind == Kind::Scalar) {
            auto entries = parseDeviceMap(item.scalar);
            if (!entries.ok())
                return valueError(where, spec, entries.error());
            for (const DeviceMapEntry& e : *entries) {
                auto added = map.add(e);
                if (!added.ok())
                    return valueError(where, spec, added.error());
            }
        } else if (item.kind == Kind::Map) {
            const YamlTree* src = nullptr;
            const YamlTree* dst = nullptr;
            for (const auto& field : item.pairs) {
                std::string key = field.first.kind == Kind::Scalar ? field.first.scalar : "";
                if (key == "src")
                    src = &field.second;
                else if (key == "dst")
                    dst = &field.second;
                else
                    return yamlError(
                        at(file, field.first),
                        std::string(spec.yamlKey) + ": " +
                            unknownNameMessage("device map field", key, {"src", "dst"}));
            }
            if (!src || !dst)
                return yamlError(where, std::string(spec.yamlKey) +
                                            ": a device map entry needs both src and dst");
            HAL_TRY(addPair(where, spec, map, *src, *dst));
        } else {
            return yamlError(where, std::string(spec.yamlKey) +
                                        ": expected 'SRC=DST' or {src: .., dst: ..}, got " +
                                        nodeKind(item));
        }
    }
    return TypedValue(map.take());
}

base::Result<Assignment> assignmentFromNode(const std::string& file, const OptionSpec& spec,
                                            const YamlTree& key, const YamlTree& value) {
    std::string where = at(file, key);
    if (value.kind == Kind::Scalar)
        return assignmentFromText(spec, SourceKind::Yaml, value.scalar, where);
    if (!spec.allows(SourceKind::Yaml))
        return assignmentFromText(spec, SourceKind::Yaml, "", where); // reports the source
    if (value.kind == Kind::Sequence && spec.type == OptionType::BackendList) {
        HAL_TRY_ASSIGN(auto v, backendListFromSequence(file, spec, value));
        return Assignment{&spec, std::move(v), where};
    }
    if ((value.kind == Kind::Sequence || value.kind == Kind::Map) &&
        spec.type == OptionType::DeviceMap) {
        HAL_TRY_ASSIGN(auto v, deviceMapFromNode(file, spec, value));
        return Assignment{&spec, std::move(v), where};
    }
    return yamlError(where, std::string(spec.yamlKey) + ": expected a " +
                                optionTypeName(spec.type) + ", got " + nodeKind(value) + " (" +
                                optionTypeSyntax(spec.type) + ")");
}

base::Result<std::vector<Assignment>> assignmentsFromDocument(const std::string& file,
                                                              const YamlTree& root) {
    std::vector<Assignment> assignments;
    if (root.kind == Kind::Null)
        return assignments;
    if (root.kind != Kind::Map)
        return yamlError(at(file, root),
                         std::string("expected a mapping of option keys (such as 'numa_check: "
                                     "false'), got ") +
                             nodeKind(root));
    std::set<std::string> seen;
    for (const auto& pair : root.pairs) {
        std::string where = at(file, pair.first);
        if (pair.first.kind != Kind::Scalar)
            return yamlError(where, "an option key must be a scalar");
        std::string key = pair.first.scalar;
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
    HAL_TRY_ASSIGN(YamlDocument document, yamlDocumentOf(text, fileName));
    if (document.documents > 1)
        return yamlError(fileName + ":" + std::to_string(document.secondDocumentLine + 1),
                         "more than one YAML document; put every option in one mapping");
    if (document.documents == 0)
        return std::vector<Assignment>{};
    return assignmentsFromDocument(fileName, document.root);
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
