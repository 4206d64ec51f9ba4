#include "tool_paths.h"

#include "hal/registry.h"

#include <filesystem>

namespace tools {

std::string pluginDirOfTool() {
    return (std::filesystem::path(hal::directoryOfThisModule()).parent_path() / "lib" / "criu")
        .string();
}

} // namespace tools
