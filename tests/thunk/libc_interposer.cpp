// Interposition at the C library boundary: this executable defines the libc (and libdrm) entry
// points AMD's thunk calls, so that the dynamic linker binds libhsakmt.so's (and libdrm's)
// references to them (the executable comes first in the global lookup scope). Calls on the fake
// machine go to the fake; every other call goes on to the next definition (RTLD_NEXT: the
// sanitizer runtime's interceptor where there is one, else the C library).
#include "fake_routes.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace thunkfake {
namespace {

std::mutex& routesMutex() {
    static std::mutex m;
    return m;
}
std::shared_ptr<fakekfd::FakeKernel>& installed() {
    static std::shared_ptr<fakekfd::FakeKernel> k;
    return k;
}
std::string& sysfs() {
    static std::string s;
    return s;
}
std::vector<FakeMapping>& maps() {
    static std::vector<FakeMapping> m;
    return m;
}

template <typename Fn> Fn next(const char* name) {
    return nextDefinition<Fn>(name);
}

bool isFakeFd(int fd) {
    return fd >= kFakeFdBase && kernel() != nullptr;
}

bool routesToKernel(const char* path) {
    if (!path || !kernel())
        return false;
    return strcmp(path, "/dev/kfd") == 0 || strncmp(path, "/dev/dri/renderD", 16) == 0;
}

int fail(int negErrno) {
    errno = -negErrno;
    return -1;
}

int openRouted(const char* path, int flags) {
    int r = kernel()->taskOpen(path, flags);
    return r < 0 ? fail(r) : r;
}

/// open() of a fake device goes to the kernel; any other to the next `name` (the mode argument
/// is in `ap` when the flags create a file).
int openOrForward(const char* name, const char* path, int flags, mode_t mode) {
    if (routesToKernel(path))
        return openRouted(path, flags);
    return next<int (*)(const char*, int, ...)>(name)(routedPath(path).c_str(), flags, mode);
}

std::string pathOfFd(int fd) {
    struct stat st {};
    if (kernel()->fstat(fd, &st) != 0)
        return "?";
    if (major(st.st_rdev) == kfd::kDrmMajor)
        return "/dev/dri/renderD" + std::to_string(minor(st.st_rdev));
    return "/dev/kfd";
}

/// Forgets the recorded mappings that [addr, addr+len) replaces.
void dropMappings(uint64_t addr, uint64_t len) {
    std::lock_guard<std::mutex> lock(routesMutex());
    auto& v = maps();
    for (auto it = v.begin(); it != v.end();)
        it = it->addr < addr + len && addr < it->addr + it->len ? v.erase(it) : it + 1;
}

} // namespace

void install(std::shared_ptr<fakekfd::FakeKernel> k, const std::string& sysfsRoot) {
    std::lock_guard<std::mutex> lock(routesMutex());
    installed() = std::move(k);
    sysfs() = sysfsRoot;
}

void uninstall() {
    std::lock_guard<std::mutex> lock(routesMutex());
    installed().reset();
    sysfs().clear();
}

fakekfd::FakeKernel* kernel() {
    return installed().get();
}

std::vector<FakeMapping> mappings() {
    std::lock_guard<std::mutex> lock(routesMutex());
    return maps();
}

void forgetMappings() {
    std::lock_guard<std::mutex> lock(routesMutex());
    maps().clear();
}

void recordMapping(const FakeMapping& m) {
    std::lock_guard<std::mutex> lock(routesMutex());
    maps().push_back(m);
}

std::string routedPath(const std::string& path) {
    if (sysfs().empty())
        return path;
    static auto realStat = next<int (*)(const char*, struct stat*)>("stat");
    return kfdinterpose::routedSysfsPath(path, sysfs(), realStat);
}

} // namespace thunkfake

using namespace thunkfake;

// Exported from the executable (the build hides symbols by default) so that libhsakmt.so and
// libdrm bind to these.
#define INTERPOSED __attribute__((visibility("default")))

extern "C" {

KFDINTERPOSE_OPEN(open, openOrForward)
KFDINTERPOSE_OPEN(open64, openOrForward)

INTERPOSED int close(int fd) {
    if (isFakeFd(fd)) {
        int r = kernel()->taskClose(fd);
        return r < 0 ? fail(r) : 0;
    }
    static auto real = next<int (*)(int)>("close");
    return real(fd);
}

INTERPOSED int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (isFakeFd(fd)) {
        int r = kernel()->ioctl(fd, request, arg);
        if (r < 0 && getenv("THUNK_DEBUG"))
            fprintf(stderr, "fake ioctl 0x%lx -> %d\n", request, r);
        return r < 0 ? fail(r) : r;
    }
    static auto real = next<int (*)(int, unsigned long, ...)>("ioctl");
    return real(fd, request, arg);
}

INTERPOSED void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
    if (!(flags & MAP_ANONYMOUS) && isFakeFd(fd)) {
        intptr_t r = kernel()->mmap(addr, len, prot, flags, fd, static_cast<uint64_t>(offset));
        if (r < 0) {
            errno = static_cast<int>(-r);
            return MAP_FAILED;
        }
        dropMappings(static_cast<uint64_t>(r), len);
        recordMapping({static_cast<uint64_t>(r), len, prot, flags, fd,
                       static_cast<uint64_t>(offset), pathOfFd(fd)});
        return reinterpret_cast<void*>(r);
    }
    static auto real = next<void* (*)(void*, size_t, int, int, int, off_t)>("mmap");
    void* r = real(addr, len, prot, flags, fd, offset);
    if (r != MAP_FAILED && (flags & MAP_FIXED))
        dropMappings(reinterpret_cast<uint64_t>(r), len);
    return r;
}

INTERPOSED void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
    return mmap(addr, len, prot, flags, fd, offset);
}

INTERPOSED int munmap(void* addr, size_t len) {
    static auto real = next<int (*)(void*, size_t)>("munmap");
    int r = real(addr, len);
    if (r == 0)
        dropMappings(reinterpret_cast<uint64_t>(addr), len);
    return r;
}

KFDINTERPOSE_SYSFS_READS(routedPath)

// libdrm: the thunk opens render nodes with drmOpenRender (libdrm would stat /dev/dri and, as
// root, mknod missing nodes). libdrm_amdgpu's calls are served in ../kfd/libdrm_amdgpu_routes.cpp.
INTERPOSED int drmOpenRender(int minor) {
    std::string path = "/dev/dri/renderD" + std::to_string(minor);
    if (kernel())
        return openRouted(path.c_str(), O_RDWR | O_CLOEXEC);
    static auto real = next<int (*)(int)>("drmOpenRender");
    return real(minor);
}

INTERPOSED int drmClose(int fd) {
    if (isFakeFd(fd))
        return close(fd);
    static auto real = next<int (*)(int)>("drmClose");
    return real(fd);
}

// CRIU's amdgpu plugin also stats the devices and the topology, opens sysfs files, and dups fds
// (fcntl F_DUPFD above the restored task's fds).
INTERPOSED int stat(const char* path, struct stat* st) {
    if (routesToKernel(path)) {
        int r = kernel()->stat(path, st);
        return r < 0 ? fail(r) : 0;
    }
    static auto real = next<int (*)(const char*, struct stat*)>("stat");
    return real(routedPath(path).c_str(), st);
}

INTERPOSED int fstat(int fd, struct stat* st) {
    if (isFakeFd(fd)) {
        int r = kernel()->fstat(fd, st);
        return r < 0 ? fail(r) : 0;
    }
    static auto real = next<int (*)(int, struct stat*)>("fstat");
    return real(fd, st);
}

INTERPOSED int dup(int fd) {
    if (isFakeFd(fd)) {
        int r = kernel()->dup(fd);
        return r < 0 ? fail(r) : r;
    }
    static auto real = next<int (*)(int)>("dup");
    return real(fd);
}

INTERPOSED int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    if (isFakeFd(fd)) {
        // F_DUPFD(min): the fake numbers every new fd above all of this process's real ones.
        if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && arg <= kFakeFdBase)
            return dup(fd);
        return fail(-EINVAL);
    }
    static auto real = next<int (*)(int, int, ...)>("fcntl");
    return real(fd, cmd, arg);
}

} // extern "C"
