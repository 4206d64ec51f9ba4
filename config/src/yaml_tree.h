#pragma once
/// \file
/// A YAML configuration as plain nodes: what config/yaml/ (the only code that links yaml-cpp)
/// hands the option parser (yaml_source.cpp). yaml-cpp and the iostreams it initialises cost criu
/// about 0.9 MiB of resident memory, so the plugin's core loads them only where a YAML file
/// exists: yaml_document_on_demand.cpp, in the core in place of yaml_document.cpp, calls
/// yamlDocumentOf in the module amdgpu_yaml.so beside it.

#include "base/result.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace config {

/// One node of a YAML document.
struct YamlTree {
    enum class Kind { Null, Scalar, Sequence, Map };
    Kind kind = Kind::Null;
    int line = -1;                                    ///< 0-based; -1 where yaml-cpp gave none
    std::string scalar;                               ///< Scalar
    std::vector<YamlTree> items;                      ///< Sequence
    std::vector<std::pair<YamlTree, YamlTree>> pairs; ///< Map, in the file's order

    // Defined below, where YamlTree is complete: std::pair<YamlTree, YamlTree> may only be
    // instantiated then (clang with libstdc++ refuses the implicit members in the class).
    YamlTree();
    YamlTree(const YamlTree&);
    YamlTree(YamlTree&&) noexcept;
    YamlTree& operator=(const YamlTree&);
    YamlTree& operator=(YamlTree&&) noexcept;
    ~YamlTree();
};
inline YamlTree::YamlTree() = default;
inline YamlTree::YamlTree(const YamlTree&) = default;
inline YamlTree::YamlTree(YamlTree&&) noexcept = default;
inline YamlTree& YamlTree::operator=(const YamlTree&) = default;
inline YamlTree& YamlTree::operator=(YamlTree&&) noexcept = default;
inline YamlTree::~YamlTree() = default;

/// A screened YAML text (yaml_screen.h) and, when it holds exactly one document, that document.
struct YamlDocument {
    size_t documents = 0;       ///< complete documents in the text
    int secondDocumentLine = 0; ///< 0-based line where the second document starts
    YamlTree root;              ///< the document when there is exactly one
};

/// Most nodes a document may expand to (aliases repeat what they name): a configuration is
/// a few dozen.
inline constexpr size_t kMaxYamlTreeNodes = 100000;

/// Screens `text` (read from `fileName`, for messages) and builds its one document. Errors name
/// the file and line: the screen's, yaml-cpp's syntax errors, a document over the limits.
base::Result<YamlDocument> yamlDocumentOf(const std::string& text, const std::string& fileName);

} // namespace config
