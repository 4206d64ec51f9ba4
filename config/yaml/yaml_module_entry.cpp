// The entry point of amdgpu_yaml.so, the module the plugin's core loads to read a YAML file
// (yaml_tree.h): yamlDocumentOf, with yaml-cpp, called across the module's edge.
#include "yaml_module.h"

extern "C" __attribute__((visibility("default"))) void
CRIU_AMDGPU_YAML_ENTRY(const std::string* text, const std::string* fileName,
                       base::Result<config::YamlDocument>* out) {
    *out = config::yamlDocumentOf(*text, *fileName);
}
