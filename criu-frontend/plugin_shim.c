/* amdgpu_plugin.so, the library criu loads: a small C plugin that loads the plugin's C++ core
 * (amdgpu/core/amdgpu_plugin_core.so, with the C++ runtime and every library it needs) only when
 * something in this criu run could involve an AMD GPU (criu_amdgpu_core_needed). Everywhere else
 * it is an inert plugin with no hooks, and costs criu a few system calls. */
#define _GNU_SOURCE
#include "plugin_abi_c.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

extern char** environ;

__attribute__((visibility("default"))) struct CriuPluginDesc CR_PLUGIN_DESC;

/* Why the core is not loaded, and an error when it should have been and could not. */
static char inert_reason[512];
static char core_error[PATH_MAX + 512];

/* Sets core_error (truncated if it must be). */
static void set_core_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_core_error(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(core_error, sizeof(core_error), fmt, args);
    va_end(args);
}

/* One line in criu's log at `level` (criu's print_on_level: 2 warn, 4 debug): `format`, then
 * `text`. */
static void log_line(unsigned level, const char* format, const char* text) {
    void (*print_on_level)(unsigned, const char*, ...) =
        (void (*)(unsigned, const char*, ...))dlsym(RTLD_DEFAULT, "print_on_level");
    char line[sizeof(core_error) + 128];
    if (!print_on_level)
        return;
    if (snprintf(line, sizeof(line), format, text) < 0)
        return;
    print_on_level(level, "%s\n", line);
}

static int inert_init(int stage) {
    (void)stage;
    if (core_error[0])
        log_line(2, "Warn (amdgpu): amdgpu_plugin: %s", core_error);
    else
        log_line(4, "amdgpu: amdgpu_plugin: inert, its core is not loaded: %s", inert_reason);
    return 0;
}

static void inert_exit(int stage, int ret) {
    (void)stage;
    (void)ret;
}

/* The directory of this library; 0 when unknown. */
static int plugin_dir(char* dir, size_t size) {
    Dl_info info;
    char* slash;
    if (!dladdr((void*)&inert_init, &info) || !info.dli_fname ||
        snprintf(dir, size, "%s", info.dli_fname) >= (int)size)
        return 0;
    slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    return 1;
}

static void load_core(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64];
    void* core;
    criu_amdgpu_core_describe_fn describe;
    if (!plugin_dir(dir, sizeof(dir))) {
        set_core_error("cannot find where amdgpu_plugin.so lies, so cannot load its core (needed "
                       "because %s): AMD GPU checkpoints will fail",
                       inert_reason);
        return;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, CRIU_AMDGPU_CORE_PATH);
    core = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    describe = core ? (criu_amdgpu_core_describe_fn)dlsym(core, CRIU_AMDGPU_CORE_DESCRIBE) : NULL;
    if (!describe) {
        set_core_error("cannot load its core %s (needed because %s): %s; install the plugin's "
                       "whole amdgpu folder next to amdgpu_plugin.so. AMD GPU checkpoints will "
                       "fail",
                       path, inert_reason, core ? "no " CRIU_AMDGPU_CORE_DESCRIBE : dlerror());
        return;
    }
    describe(&CR_PLUGIN_DESC, dir);
}

/* Runs at dlopen, before criu verifies CR_PLUGIN_DESC. */
__attribute__((constructor)) static void amdgpu_plugin_describe(void) {
    /* The configuration's default files (config::Sources). */
    static const char* const config_files[] = {"/etc/criu/amdgpu.yaml", "/etc/criu/amdgpu.conf",
                                               NULL};
    struct CriuAmdgpuRunFacts facts = {"/proc/devices", config_files, environ, -1, 0, NULL};
    int (*image_dir)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "criu_get_image_dir");
    int (*get_options)(int*, char***) =
        (int (*)(int*, char***))dlsym(RTLD_DEFAULT, "criu_plugin_get_options");
    char** argv = NULL;
    int argc = 0;

    CR_PLUGIN_DESC.name = "amdgpu_plugin";
    CR_PLUGIN_DESC.init = inert_init;
    CR_PLUGIN_DESC.exit = inert_exit;
    CR_PLUGIN_DESC.version = 0x000200;
    CR_PLUGIN_DESC.max_hooks = 0; /* no hook: accepted by every criu */
    if (image_dir)
        facts.image_dir_fd = image_dir();
    if (get_options && get_options(&argc, &argv) == 0 && argv) {
        facts.option_count = argc;
        facts.options = argv;
    }
    if (criu_amdgpu_core_needed(&facts, inert_reason, sizeof(inert_reason)))
        load_core();
}
