/* Whether a criu run could involve an AMD GPU, decided without the C++ core (plugin_abi_c.h). */
#include "plugin_abi_c.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The character-device major /proc/devices lists for a driver named `name`, or -1. */
static int character_major(const char* proc_devices, const char* name) {
    FILE* f = fopen(proc_devices, "re");
    char line[256], driver[128];
    int major = -1, character = 0, found = -1;
    if (!f)
        return -1;
    while (found < 0 && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "Character devices:", 18))
            character = 1;
        else if (!strncmp(line, "Block devices:", 14))
            break;
        else if (character && sscanf(line, "%d %127s", &major, driver) == 2 &&
                 !strcmp(driver, name))
            found = major;
    }
    fclose(f);
    return found;
}

static int starts_with(const char* text, const char* prefix) {
    return !strncmp(text, prefix, strlen(prefix));
}

/* An amdgpu plugin option: "[--]amdgpu.NAME..." or "[--]amdgpu_plugin.NAME..." (or ':'). */
static int is_amdgpu_option(const char* option) {
    static const char* const plugins[] = {"amdgpu", "amdgpu_plugin"};
    size_t i, n;
    if (starts_with(option, "--"))
        option += 2;
    for (i = 0; i < sizeof(plugins) / sizeof(plugins[0]); ++i) {
        n = strlen(plugins[i]);
        if (!strncmp(option, plugins[i], n) && (option[n] == '.' || option[n] == ':'))
            return 1;
    }
    return 0;
}

/* The first amdgpu image in the image directory ("" when none). */
static int amdgpu_image(int dir_fd, char* name, size_t size) {
    int fd;
    DIR* dir;
    struct dirent* entry;
    int found = 0;
    if (dir_fd < 0 || (fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return 0;
    dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return 0;
    }
    while (!found && (entry = readdir(dir)))
        if (starts_with(entry->d_name, "amdgpu-")) {
            snprintf(name, size, "%s", entry->d_name);
            found = 1;
        }
    closedir(dir);
    return found;
}

int criu_amdgpu_core_needed(const struct CriuAmdgpuRunFacts* facts, char* why, size_t size) {
    static const char* const drivers[] = {"kfd", "drm"};
    const char* const* file;
    char* const* entry;
    char image[256];
    size_t i;
    int k;

    for (i = 0; i < sizeof(drivers) / sizeof(drivers[0]); ++i)
        if (character_major(facts->proc_devices, drivers[i]) >= 0) {
            snprintf(why, size, "the kernel has a %s driver (%s)", drivers[i], facts->proc_devices);
            return 1;
        }
    for (entry = facts->environment; entry && *entry; ++entry)
        if (starts_with(*entry, "CRIU_AMDGPU_") || starts_with(*entry, "KFD_")) {
            snprintf(why, size, "the environment sets %.*s", (int)strcspn(*entry, "="), *entry);
            return 1;
        }
    for (k = 0; k < facts->option_count; ++k)
        if (facts->options[k] && is_amdgpu_option(facts->options[k])) {
            snprintf(why, size, "plugin option %s", facts->options[k]);
            return 1;
        }
    for (file = facts->config_files; file && *file; ++file)
        if (access(*file, F_OK) == 0) {
            snprintf(why, size, "%s exists", *file);
            return 1;
        }
    if (amdgpu_image(facts->image_dir_fd, image, sizeof(image))) {
        snprintf(why, size, "the image directory holds %s", image);
        return 1;
    }
    snprintf(why, size,
             "no kfd or drm driver in %s, no CRIU_AMDGPU_* or KFD_* variable, no amdgpu plugin "
             "option, no configuration file, no amdgpu image",
             facts->proc_devices);
    return 0;
}
