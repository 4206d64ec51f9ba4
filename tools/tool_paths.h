#pragma once
/// \file
/// Where the tool finds what the plugin uses, in the installed (and the build) layout.

#include <string>

namespace tools {

/// <prefix>/lib/criu next to <prefix>/bin, where this tool is: the plugin directory, whose
/// amdgpu folder holds the backends (hal::defaultBackendDir).
std::string pluginDirOfTool();

} // namespace tools
