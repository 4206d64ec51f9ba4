// libkfd_driver_criu_preload.so: LD_PRELOAD it into criu, with CRIU_AMDGPU_KFD_DRIVER set to a
// driver root (driver_server.h), to run CRIU's own amdgpu plugin (built unmodified from Debian's
// criu source, tests/thunk/upstream) on the user-space KFD driver. The plugin's libc and
// libdrm_amdgpu calls reach the driver through the KFD backend's DriverKernel, the same client
// of the driver our plugin uses with option kfd-driver: opens of /dev/kfd and
// /dev/dri/renderD* become fds of the driver's nodes, their ioctls (AMDKFD_IOC_CRIU_OP's dmabuf
// and render fds included) and fstat, and stat of the device paths, go to the driver; the
// libdrm_amdgpu calls of its SDMA copies run on the driver's engine (../libdrm_amdgpu_routes.h);
// its reads of the KFD topology in sysfs read the driver's tree. Every other call goes on to the
// C library.
//
// One precaution: the connection to the driver is a socket the kernel a plugin talks to
// would not have. Made in a task criu restores, at its lowest free fd, it would take the number
// of one of the task's own fds, which criu then finds in use ("fd 4 already in use"); sockets
// this library makes go to kDriverFdFloor and above, out of the way of the task's fds.
#include "interposer_support.h"
#include "kfd/driver_kernel.h"
#include "kfd/driver_protocol.h"
#include "kfd/real_kernel.h"
#include "libdrm_amdgpu_routes.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

using kfdinterpose::nextDefinition;

namespace {

constexpr int kDriverFdFloor = 200;

/// The driver criu talks to (CRIU_AMDGPU_KFD_DRIVER) and the kernel interface over it.
class Routes {
public:
    static Routes& get() {
        static Routes routes;
        return routes;
    }
    bool active() const { return kernel_ != nullptr; }
    kfd::KernelInterface& kernel() { return *kernel_; }
    const std::string& sysfs() const { return sysfs_; }
    const std::string& root() const { return root_; }

    /// The driver's id of the file `fd` is an fd of, or -1 when it is not one of the driver's.
    int64_t fileOf(int fd) const { return active() ? kfddriver::fileOfFd(root_, 0, fd) : -1; }
    bool ours(int fd) const { return fileOf(fd) >= 0; }

private:
    Routes() : root_(kfdinterpose::driverRootFromEnvironment("kfd driver criu preload")) {
        if (root_.empty())
            return;
        sysfs_ = kfddriver::sysfsPath(root_);
        kernel_ = kfd::makeDriverKernel(root_, kfd::makeRealKernel());
    }

    std::string root_, sysfs_;
    std::unique_ptr<kfd::KernelInterface> kernel_;
};

/// A KernelInterface result (-errno or a value) as the C library returns it.
int asLibc(int r) {
    if (r >= 0)
        return r;
    errno = -r;
    return -1;
}

std::string routed(const char* path) {
    return kfdinterpose::routedPathOf(path, Routes::get().sysfs());
}

int openOrForward(const char* name, const char* path, int flags, mode_t mode) {
    Routes& routes = Routes::get();
    if (routes.active() && kfdinterpose::isDriverDevicePath(path))
        return asLibc(routes.kernel().open(path, flags));
    return nextDefinition<int (*)(const char*, int, ...)>(name)(routed(path).c_str(), flags, mode);
}

} // namespace

namespace kfdinterpose {

int libdrmServingFd(int fd, sdma::Libdrm** drm, int* deviceFd) {
    // The driver's libdrm knows a render node by the driver's id of its file.
    int64_t file = Routes::get().fileOf(fd);
    *drm = file >= 0 ? &Routes::get().kernel().libdrm() : nullptr;
    *deviceFd = static_cast<int>(file);
    return 0;
}

sdma::Libdrm* libdrmOfHandles() {
    return Routes::get().active() ? &Routes::get().kernel().libdrm() : nullptr;
}

const char* fakeMarketingName() {
    return "Fake AMD GPU (user-space KFD)";
}

} // namespace kfdinterpose

#define INTERPOSED extern "C" __attribute__((visibility("default")))

KFDINTERPOSE_OPEN(open, openOrForward)
KFDINTERPOSE_OPEN(open64, openOrForward)

namespace {

int ioctlOrForward(int fd, unsigned long request, void* arg) {
    if (Routes::get().ours(fd))
        return asLibc(Routes::get().kernel().ioctl(fd, request, arg));
    static auto real = nextDefinition<int (*)(int, unsigned long, ...)>("ioctl");
    return real(fd, request, arg);
}

} // namespace

KFDINTERPOSE_IOCTL(ioctlOrForward)

// Only for sockets this library's own code makes (the driver's protocol, linked in): criu's own
// go on as they are.
INTERPOSED int socket(int domain, int type, int protocol) {
    static auto real = nextDefinition<int (*)(int, int, int)>("socket");
    int fd = real(domain, type, protocol);
    Dl_info caller{}, self{};
    if (fd < 0 || !dladdr(__builtin_return_address(0), &caller) ||
        !dladdr(reinterpret_cast<void*>(&asLibc), &self) || caller.dli_fbase != self.dli_fbase)
        return fd;
    int high = fcntl(fd, (type & SOCK_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, kDriverFdFloor);
    int saved = errno;
    nextDefinition<int (*)(int)>("close")(fd);
    errno = saved;
    return high;
}

// The driver's files, and the nodes of the machine's memory at /dev paths (criu's stat of a
// mapping of /dev/kfd), are the devices the driver says they are.
INTERPOSED int fstat(int fd, struct stat* st) {
    Routes& routes = Routes::get();
    if (routes.ours(fd))
        return asLibc(routes.kernel().fstat(fd, st));
    static auto real = nextDefinition<int (*)(int, struct stat*)>("fstat");
    if (int r = real(fd, st); r != 0 || !routes.active())
        return r;
    return asLibc(
        kfd::asMachineDevice(routes.kernel(), routes.root(), kfddriver::linkOfFd(0, fd), st));
}

INTERPOSED int fstat64(int fd, struct stat64* st) {
    static_assert(sizeof(struct stat64) == sizeof(struct stat), "x86-64: stat64 is stat");
    return fstat(fd, reinterpret_cast<struct stat*>(st));
}

INTERPOSED int stat(const char* path, struct stat* st) {
    Routes& routes = Routes::get();
    if (routes.active() && kfdinterpose::isDriverDevicePath(path)) {
        return asLibc(routes.kernel().stat(path, st));
    }
    static auto real = nextDefinition<int (*)(const char*, struct stat*)>("stat");
    return real(routed(path).c_str(), st);
}

INTERPOSED int stat64(const char* path, struct stat64* st) {
    return stat(path, reinterpret_cast<struct stat*>(st));
}

KFDINTERPOSE_SYSFS_READS(routed)
