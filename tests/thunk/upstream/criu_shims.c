// criu's own symbols that CRIU's amdgpu plugin (Debian's criu 4.1.1 source, compiled unmodified)
// calls: criu is linked with -rdynamic and the plugin binds to these at dlopen. Here they are the
// least criu does for them, compiled against criu's own headers (so `opts` has criu's layout),
// linked into the plugin's shared object, with setters the test driver finds by dlsym.
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cr_options.h"
#include "criu-plugin.h"
#include "files.h"
#include "image.h"
#include "img-streamer.h"
#include "log.h"

// criu's options: all zero (no image streaming: open_img_file opens files in the image dir).
struct cr_options opts;

static int image_dir_fd = -1;
static unsigned int log_level = 2; // criu's default: errors and warnings
static FILE* log_file;
#define MAX_INVENTORY 8
static char inventory[MAX_INVENTORY][64];

// The test driver's controls.
void shim_set_image_dir(int fd) {
    image_dir_fd = fd;
}
void shim_set_log(FILE* f, unsigned int level) {
    log_file = f;
    log_level = level;
}
// What the inventory image's `plugins` list holds (criu's dump writes it, its restore reads it).
int shim_inventory_count(void) {
    int n = 0;
    for (int i = 0; i < MAX_INVENTORY; ++i)
        n += inventory[i][0] != 0;
    return n;
}
void shim_inventory_clear(void) {
    memset(inventory, 0, sizeof(inventory));
}

// criu/log.c: a message at `loglevel` (0 msg, 1 error, 2 warn, 3 info, 4 debug) reaches the log
// when the log level admits it.
void print_on_level(unsigned int loglevel, const char* format, ...) {
    if (loglevel > log_level)
        return;
    va_list ap;
    va_start(ap, format);
    vfprintf(log_file ? log_file : stderr, format, ap);
    va_end(ap);
}

// criu/plugin.c: the fd of the image directory.
int criu_get_image_dir(void) {
    return image_dir_fd;
}

// criu/img-streamer.c: only used with --stream, which these runs never set.
int img_streamer_open(char* filename, int flags) {
    (void)flags;
    pr_err("img_streamer_open(%s): image streaming is not part of this harness\n", filename);
    return -1;
}

// criu/image.c (4.1): names of plugins the checkpoint needs, kept in the inventory image.
int add_inventory_plugin(const char* name) {
    for (int i = 0; i < MAX_INVENTORY; ++i)
        if (strcmp(inventory[i], name) == 0)
            return 0;
    for (int i = 0; i < MAX_INVENTORY; ++i)
        if (!inventory[i][0]) {
            snprintf(inventory[i], sizeof(inventory[i]), "%s", name);
            return 0;
        }
    return -1;
}

bool check_and_remove_inventory_plugin(const char* name, size_t n) {
    for (int i = 0; i < MAX_INVENTORY; ++i)
        if (inventory[i][0] && strlen(inventory[i]) == n && strncmp(inventory[i], name, n) == 0) {
            inventory[i][0] = 0;
            return true;
        }
    return false;
}

// criu/files.c: one more than the highest fd the task `pid` has open (criu reads its fdinfo;
// the task is this process here, so /proc/self/fd says).
int find_unused_fd_pid(pid_t pid) {
    (void)pid;
    DIR* d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int max = -1;
    for (struct dirent* e; (e = readdir(d));) {
        int fd = atoi(e->d_name);
        if (fd > max)
            max = fd;
    }
    closedir(d);
    return max + 1;
}
