/* A second criu plugin for the e2e tests, standing in for another vendor's plugin (CUDA): it owns
 * fds of /dev/cpu_dma_latency opened outside the mock GPU. Loaded beside amdgpu_plugin.so, it
 * proves that the amdgpu plugin answers -ENOTSUP for what is not its own, whatever the load
 * order, even for a device with the mock GPU's own numbers. Written against the 3.17 hook table,
 * which every criu accepts; under a criu whose RESTORE_EXT_FILE passes retry_needed (14 hooks or
 * more, read from criu's hook table as amdgpu_plugin does) it answers that too, as a plugin built
 * against that criu's header would: criu leaves the flag uninitialised. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "plugin_desc_317.h"

extern int criu_get_image_dir(void);

#define OWNED_DEVICE "/dev/cpu_dma_latency"

static int init(int stage) {
    (void)stage;
    return 0;
}
static void fini(int stage, int ret) {
    (void)stage;
    (void)ret;
}

static int owned(int fd) {
    struct stat st, want;
    char path[64], target[256];
    ssize_t n;
    if (fstat(fd, &st) || stat(OWNED_DEVICE, &want) || !S_ISCHR(st.st_mode) ||
        st.st_rdev != want.st_rdev)
        return 0;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    if (n < 0)
        return 0;
    target[n] = 0;
    return strcmp(target, OWNED_DEVICE) == 0;
}

static int dump_ext_file(int fd, int id) {
    char name[64];
    int out;
    if (!owned(fd))
        return -ENOTSUP;
    snprintf(name, sizeof(name), "other-plugin-%d.img", id);
    out = openat(criu_get_image_dir(), name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0)
        return -errno;
    close(out);
    return 0;
}

static int restore_ext_file(int id) {
    char name[64];
    snprintf(name, sizeof(name), "other-plugin-%d.img", id);
    if (faccessat(criu_get_image_dir(), name, F_OK, 0))
        return -ENOTSUP;
    return open(OWNED_DEVICE, O_RDONLY);
}

static int restore_ext_file_retry(int id, bool* retry_needed) {
    if (retry_needed)
        *retry_needed = false;
    return restore_ext_file(id);
}

E2E_PLUGIN("other_plugin", init, fini,
           {0, 0, (void*)dump_ext_file, (void*)restore_ext_file, 0, 0, 0, 0, 0, 0});

/* criu's hook count: the size of its hook table (one list head, then one per hook). */
static unsigned criu_hooks(void) {
    void* table = dlsym(RTLD_DEFAULT, "cr_plugin_ctl");
    const ElfW(Sym)* symbol = NULL;
    Dl_info info;
    if (!table || !dladdr1(table, &info, (void**)&symbol, RTLD_DL_SYMENT) || !symbol)
        return 0;
    return (unsigned)(symbol->st_size / (2 * sizeof(void*))) - 1;
}

__attribute__((constructor)) static void describe(void) {
    if (criu_hooks() >= 14)
        CR_PLUGIN_DESC.hooks[3] = (void*)restore_ext_file_retry;
}
