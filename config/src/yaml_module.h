#pragma once
/// \file
/// The edge between the plugin's core and amdgpu_yaml.so (yaml_tree.h): the module's one entry
/// point, built with the core from the same sources, so C++ types may cross it.

#include "yaml_tree.h"

#include <string>

#define CRIU_AMDGPU_YAML_ENTRY criu_amdgpu_yaml_document
#define CRIU_AMDGPU_YAML_ENTRY_NAME "criu_amdgpu_yaml_document"
/// The module's file name, in the core's own directory.
#define CRIU_AMDGPU_YAML_MODULE "amdgpu_yaml.so"

extern "C" {
/// Sets `*out` to config::yamlDocumentOf(*text, *fileName).
using CriuAmdgpuYamlEntry = void (*)(const std::string* text, const std::string* fileName,
                                     base::Result<config::YamlDocument>* out);
}
