#pragma once
/// \file
/// The functions criu exports to plugins, looked up with dlsym(RTLD_DEFAULT) because they differ
/// between criu versions (criu-plugin-abi.md). A missing function is a missing feature, never a
/// load failure.

#include "base/log.h"

#include <string>
#include <vector>

namespace frontend {

/// criu's exported services, each possibly absent.
struct CriuServices {
    int (*getImageDir)() = nullptr;                                       ///< criu_get_image_dir
    void (*printOnLevel)(unsigned level, const char* fmt, ...) = nullptr; ///< print_on_level
    int (*addInventoryPlugin)(const char* name) = nullptr;                ///< add_inventory_plugin
    bool (*checkAndRemoveInventoryPlugin)(const char* name, size_t len) = nullptr;
    int (*getPluginOptions)(int* argc, char*** argv) = nullptr;  ///< criu_plugin_get_options
    int (*imgStreamerOpen)(char* filename, int flags) = nullptr; ///< img_streamer_open
    /// criu's fdstore (every criu since 3.x): keeps an fd for the restored tasks, which can get a
    /// copy of it back by its id (criu closes every other fd a task inherits).
    int (*fdstoreAdd)(int fd) = nullptr; ///< fdstore_add
    int (*fdstoreGet)(int id) = nullptr; ///< fdstore_get
    /// The first fd number above every fd of restored task `pid` (its pid in its namespace) and
    /// below criu's service fds (every criu since 3.x; CRIU's own amdgpu plugin places its fds
    /// there): task_fd_floor.h.
    int (*findUnusedFdPid)(int pid) = nullptr; ///< find_unused_fd_pid
    /// criu's global `opts`, whose first member has been `int final_state` in every criu since
    /// 3.x (checked in 3.17 to 4.2 sources and in 4.3's code).
    const int* options = nullptr;
    /// criu's own command line (/proc/self/cmdline: its arguments, each ended by a NUL).
    std::string commandLine;

    /// Looks every service up in the process (criu) this library is loaded into.
    static CriuServices lookUp();
    /// A copy of this run's plugin options, "--PLUGIN.NAME[=VALUE]" as criu hands them (criu
    /// owns the strings). criu 4.3 hands an argv whose argv[0] is a program name
    /// ("criu-plugin"): it is left out.
    std::vector<std::string> pluginOptions() const;
    /// What criu will do with the dumped tasks (opts.final_state: kTaskAlive with
    /// --leave-running, kTaskDead by default); 0 when unknown.
    int finalState() const { return options ? *options : 0; }
    /// Whether criu streams its images (criu --stream): asked of criu's command line, never
    /// inferred from the image directory, which may come from a registry and hold any name.
    /// (`stream` set in a criu configuration file is not seen: give --stream.)
    bool streams() const;
};

/// Makes this library log through criu's print_on_level (when criu exports it) and returns that
/// sink, so backends can be handed the same one; nullptr when criu has no print_on_level.
base::LogSink installCriuLogSink(const CriuServices& services);
/// Sends every line that would go to criu's log (the core's and the backends', whose copies of
/// the HAL were handed the sink at load) to `sink` instead: in a process forked off criu, whose
/// log fd is closed (the dump's guardian). nullptr: criu's log again.
void redirectCriuLogSink(base::LogSink sink);

} // namespace frontend
