/* The C side of the plugin: criu's descriptor type, and the interface between amdgpu_plugin.so
 * (plugin_shim.c, C, which criu loads) and its C++ core (amdgpu/core/amdgpu_plugin_core.so), which
 * the shim loads only where an AMD GPU may be involved. Included by C and C++. */
#ifndef CRIU_AMDGPU_PLUGIN_ABI_C_H
#define CRIU_AMDGPU_PLUGIN_ABI_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The most hooks any known criu has (4.3: CR_PLUGIN_HOOK__MAX = 17). */
#define CRIU_AMDGPU_HOOK_SLOTS 17

/** criu's cr_plugin_desc_t, with room for the most hooks any criu knows. */
struct CriuPluginDesc {
    const char* name;
    int (*init)(int stage);
    void (*exit)(int stage, int ret);
    unsigned int version;
    unsigned int max_hooks;
    void* hooks[CRIU_AMDGPU_HOOK_SLOTS];
};

/** Where the core lies, relative to the directory of amdgpu_plugin.so. */
#define CRIU_AMDGPU_CORE_PATH "amdgpu/core/amdgpu_plugin_core.so"
/** The core's one entry point: fills `desc` for the running criu with the core's own init, exit
 * and hooks, and remembers `plugin_dir` (the directory of amdgpu_plugin.so, where the backends'
 * folder is). Never fails: at worst it describes the 3.17 ABI, which every criu accepts. */
#define CRIU_AMDGPU_CORE_DESCRIBE "criu_amdgpu_core_describe"
typedef void (*criu_amdgpu_core_describe_fn)(struct CriuPluginDesc* desc, const char* plugin_dir);

/** What decides whether the core is needed in this criu run. */
struct CriuAmdgpuRunFacts {
    const char* proc_devices;        /**< the kernel's list of device majors (/proc/devices) */
    const char* const* config_files; /**< the plugin's default configuration files, NULL-ended */
    char* const* environment;        /**< "NAME=VALUE" entries, NULL-ended (NULL: none) */
    int image_dir_fd;                /**< criu's image directory, -1 when unknown */
    int option_count;                /**< criu's plugin options (criu_plugin_get_options) */
    char* const* options;
};

/** Whether anything in this run could involve an AMD GPU: a kfd or drm driver in the kernel, a
 * CRIU_AMDGPU_* or KFD_* variable, an amdgpu plugin option, a configuration file, or amdgpu
 * images in the image directory. Returns 1 and the first reason (in `why`, `size` bytes), or 0
 * and why nothing can. */
int criu_amdgpu_core_needed(const struct CriuAmdgpuRunFacts* facts, char* why, size_t size);

#ifdef __cplusplus
}
#endif

#endif
