// yamlDocumentOf with yaml-cpp linked: what every program but the plugin's core runs, and what
// the core's module amdgpu_yaml.so runs for it.
#include "yaml_screen.h"
#include "yaml_tree.h"

#include <yaml-cpp/yaml.h>

namespace config {
namespace {

base::Error yamlError(const std::string& file, int line, const std::string& message) {
    std::string where = line >= 0 ? file + ":" + std::to_string(line + 1) : file;
    return base::makeError(base::ErrorCode::Config, "%s: %s", where.c_str(), message.c_str());
}

int lineOf(const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? -1 : mark.line;
}

// Copies `node` into `out`; false when the document expands past kMaxYamlTreeNodes.
bool copyNode(const YAML::Node& node, YamlTree& out, size_t& budget) {
    if (budget == 0)
        return false;
    --budget;
    out.line = lineOf(node);
    if (node.IsScalar()) {
        out.kind = YamlTree::Kind::Scalar;
        out.scalar = node.Scalar();
    } else if (node.IsSequence()) {
        out.kind = YamlTree::Kind::Sequence;
        for (const YAML::Node& item : node)
            if (!copyNode(item, out.items.emplace_back(), budget))
                return false;
    } else if (node.IsMap()) {
        out.kind = YamlTree::Kind::Map;
        for (const auto& pair : node) {
            auto& copied = out.pairs.emplace_back();
            if (!copyNode(pair.first, copied.first, budget) ||
                !copyNode(pair.second, copied.second, budget))
                return false;
        }
    }
    return true;
}

} // namespace

base::Result<YamlDocument> yamlDocumentOf(const std::string& text, const std::string& fileName) {
    // yaml-cpp is never handed a text it could loop on: the screen runs its parser first.
    HAL_TRY_ASSIGN(YamlScreen screen, screenYaml(text, fileName));
    YamlDocument document;
    document.documents = screen.documents;
    document.secondDocumentLine = screen.secondDocumentLine;
    if (screen.documents != 1)
        return document;
    // yaml-cpp reports through exceptions; none may leave config/.
    try {
        size_t budget = kMaxYamlTreeNodes;
        if (!copyNode(YAML::Load(text), document.root, budget))
            return yamlError(fileName, -1,
                             "the document expands to more than " +
                                 std::to_string(kMaxYamlTreeNodes) +
                                 " YAML nodes; a configuration file is far smaller");
    } catch (const YAML::Exception& e) {
        return yamlError(fileName, e.mark.is_null() ? -1 : e.mark.line,
                         "YAML syntax error: " + e.msg);
    } catch (const std::exception& e) {
        return yamlError(fileName, -1, std::string("cannot parse YAML: ") + e.what());
    }
    return document;
}

} // namespace config
