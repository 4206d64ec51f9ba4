#pragma once
/// \file
/// The functions criu exports to plugins, looked up with dlsym(RTLD_DEFAULT) because they differ
/// between criu versions (criu-plugin-abi.md). A missing function is a missing feature, never a
/// load failure.

#include "hal/log.h"

#include <string>
#include <vector>

namespace frontend {

/// criu's exported services, each possibly absent.
struct CriuServices {
    int (*getImageDir)() = nullptr;                                  ///< criu_get_image_dir
    void (*printOnLevel)(unsigned level, const char* fmt, ...) = nullptr; ///< print_on_level
    int (*addInventoryPlugin)(const char* name) = nullptr;           ///< add_inventory_plugin
    bool (*checkAndRemoveInventoryPlugin)(const char* name, size_t len) = nullptr;
    int (*getPluginOptions)(int* argc, char*** argv) = nullptr;      ///< criu_plugin_get_options
    int (*imgStreamerOpen)(char* filename, int flags) = nullptr;     ///< img_streamer_open

    /// Looks every service up in the process (criu) this library is loaded into.
    static CriuServices lookUp();
    /// A copy of criu's plugin options (criu's argv is shared and mutable).
    std::vector<std::string> pluginOptions() const;
};

/// Makes this library log through criu's print_on_level (when criu exports it) and returns that
/// sink, so backends can be handed the same one; nullptr when criu has no print_on_level.
hal::LogSink installCriuLogSink(const CriuServices& services);

} // namespace frontend
