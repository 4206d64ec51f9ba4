/* An fd audit plugin for the e2e tests, loaded by criu beside amdgpu_plugin.so. It records
 * criu's own fds ("fd -> target", one per line) when criu loads it (init) and once criu has
 * finished and unloaded every plugin (process exit), into CRIU_FD_AUDIT_DIR/criu-<pid>.init and
 * .exit. Plugins are unloaded in an order criu does not define, so the second record is taken
 * from an exit handler of this library, pinned with RTLD_NODELETE so that criu's dlclose does not
 * unload it first. Restored tasks (forked from criu, never exiting through it) record nothing.
 * Written against the 3.17 hook table, which every criu accepts; it declares no hooks. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin_desc_317.h"

static pid_t criu_pid;

static void record(const char* suffix) {
    const char* dir = getenv("CRIU_FD_AUDIT_DIR");
    char path[512], link[sizeof("/proc/self/fd/") + sizeof(((struct dirent*)0)->d_name)],
        target[512];
    DIR* fds;
    FILE* out;
    struct dirent* de;
    if (!dir || getpid() != criu_pid)
        return;
    snprintf(path, sizeof(path), "%s/criu-%d.%s", dir, (int)criu_pid, suffix);
    out = fopen(path, "we");
    if (!out)
        return;
    fds = opendir("/proc/self/fd");
    while (fds && (de = readdir(fds))) {
        ssize_t n;
        if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(fds) ||
            atoi(de->d_name) == fileno(out))
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = 0;
        fprintf(out, "%s -> %s\n", de->d_name, target);
    }
    if (fds)
        closedir(fds);
    fclose(out);
}

static void record_at_exit(void) {
    record("exit");
}

static int init(int stage) {
    Dl_info self;
    (void)stage;
    criu_pid = getpid();
    record("init");
    /* Pin this library so that the exit handler outlives criu's dlclose of every plugin. */
    if (dladdr((void*)init, &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD);
    atexit(record_at_exit);
    return 0;
}

static void fini(int stage, int ret) {
    (void)stage;
    (void)ret;
}

E2E_PLUGIN("fd_audit", init, fini, {0});
