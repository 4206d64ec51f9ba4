#pragma once
/// \file
/// What the two C library interposers of the fake KFD share: the in-process one of the thunk
/// tests (../thunk/libc_interposer.cpp) and the preloaded one of the user-space driver
/// (driver/preload_interposer.cpp).

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

/// Defines the C library's `NAME` (open, open64) as calling `HANDLER(#NAME, path, flags, mode)`,
/// the mode taken from the variable arguments when the flags create a file.
#define KFDINTERPOSE_OPEN(NAME, HANDLER)                                                           \
    extern "C" __attribute__((visibility("default"))) int NAME(const char* path, int flags, ...) { \
        mode_t mode = 0;                                                                           \
        if (flags & (O_CREAT | O_TMPFILE)) {                                                       \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = static_cast<mode_t>(va_arg(ap, int));                                           \
            va_end(ap);                                                                            \
        }                                                                                          \
        return HANDLER(#NAME, path, flags, mode);                                                  \
    }

/// Defines the C library's ioctl as calling `HANDLER(fd, request, arg)`, the argument taken as the
/// pointer every ioctl the interposers serve passes.
#define KFDINTERPOSE_IOCTL(HANDLER)                                                                \
    extern "C" __attribute__((visibility("default"))) int ioctl(int fd, unsigned long request,     \
                                                                ...) {                             \
        va_list ap;                                                                                \
        va_start(ap, request);                                                                     \
        void* arg = va_arg(ap, void*);                                                             \
        va_end(ap);                                                                                \
        return HANDLER(fd, request, arg);                                                          \
    }

/// Defines the C library's fopen, fopen64 and opendir as opening `ROUTE(path)` (a std::string:
/// the KFD topology of sysfs routed to a machine's tree), past the interposer.
#define KFDINTERPOSE_SYSFS_READS(ROUTE)                                                            \
    extern "C" __attribute__((visibility("default"))) FILE* fopen(const char* path,                \
                                                                  const char* mode) {              \
        return kfdinterpose::nextFopen(false, ROUTE(path), mode);                                  \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) FILE* fopen64(const char* path,              \
                                                                    const char* mode) {            \
        return kfdinterpose::nextFopen(true, ROUTE(path), mode);                                   \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) DIR* opendir(const char* path) {             \
        return kfdinterpose::nextOpendir(ROUTE(path));                                             \
    }

namespace kfdinterpose {

/// The next definition of the C function `name` after the interposer's (the sanitizer's
/// interceptor where there is one, else the library's); aborts when there is none.
template <typename Fn> Fn nextDefinition(const char* name) {
    void* p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "interposer: no next definition of %s\n", name);
        abort();
    }
    return reinterpret_cast<Fn>(p);
}

/// Where `path` goes on a machine whose KFD topology tree is at `sysfsRoot`: the KFD topology of
/// /sys (/sys/devices/virtual/kfd/kfd/topology and /sys/class/kfd/kfd/topology) into the tree,
/// and a NUMA node directory the host lacks to the host's node 0 (the thunk reads each CPU node's
/// caches from the NUMA node of the same number); any other path stays. `realStat` is stat(2)
/// past the interposer.
std::string routedSysfsPath(const std::string& path, const std::string& sysfsRoot,
                            int (*realStat)(const char*, struct stat*));

/// routedSysfsPath of `path` past the interposer's stat; `path` itself (or "" for null) when
/// `sysfsRoot` is empty (no machine to route to).
std::string routedPathOf(const char* path, const std::string& sysfsRoot);

/// fopen (`large`: fopen64) and opendir of `path` past the interposer: what the interposers'
/// own fopen, fopen64 and opendir call with the routed path.
FILE* nextFopen(bool large, const std::string& path, const char* mode);
DIR* nextOpendir(const std::string& path);

/// Whether `path` names a device the user-space KFD driver serves: /dev/kfd, /dev/dri/renderD*.
bool isDriverDevicePath(const char* path);

/// The driver root a preloaded interposer routes to: CRIU_AMDGPU_KFD_DRIVER made canonical, or ""
/// when it is unset or cannot be resolved (said on stderr, naming `who`).
std::string driverRootFromEnvironment(const char* who);

} // namespace kfdinterpose
