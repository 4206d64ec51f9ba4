// libkfd_driver_preload.so: LD_PRELOAD it into an unmodified program (AMD's thunk, libdrm) and set
// CRIU_AMDGPU_KFD_DRIVER to a driver root (driver_server.h): the program's opens of /dev/kfd and
// /dev/dri/renderD* become real fds of the driver's files (block nodes of the machine's loop
// device), its ioctls on them go to the driver (a render node's DRM ioctls too, which the
// driver serves to libdrm_amdgpu: render_node_service.h), its mmaps of them map the machine's
// memory, and its reads of the KFD topology and of /sys/dev/char/226:* read the driver's trees.
// A dma-buf a render node exports (PRIME) is a node of the driver too: its mmaps map the BO's
// memory, its fstat and lseek say the BO's size. Every other call goes on to the C library. dup,
// fork, close and munmap need nothing of the driver: the fds and mappings are the kernel's own.
#include "interposer_support.h"
#include "kfd/driver_protocol.h"
#include "render_node_protocol.h"

#include <dirent.h>
#include <fcntl.h>
#include <libdrm/drm.h>
#include <linux/kfd_ioctl.h>
#include <linux/sync_file.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

using kfddriver::Message;
using kfddriver::Op;

namespace {

template <typename Fn> Fn next(const char* name) {
    return kfdinterpose::nextDefinition<Fn>(name);
}

/// The driver this process talks to (CRIU_AMDGPU_KFD_DRIVER), and its connection.
class DriverLink {
public:
    static DriverLink& get() {
        static DriverLink link;
        return link;
    }
    bool active() const { return !root_.empty(); }
    const std::string& root() const { return root_; }
    const std::string& sysfs() const { return sysfs_; }

    /// The driver's id of the file `fd` is an fd of, or -1 when it is not one of the driver's.
    long fileOf(int fd) const {
        return active() ? static_cast<long>(kfddriver::fileOfFd(root_, 0, fd)) : -1;
    }

    /// Sends `request` as this process and waits for the answer: false when the driver cannot be
    /// reached (the reason on stderr). Each call is a connection of its own, closed before the
    /// call returns: the kernel a program calls into leaves no fd in its fd table, and a socket
    /// kept open would be one that criu must dump (a stream socket to a process outside the
    /// dumped tree, which it refuses) and could not restore. The driver takes the caller from
    /// the connection (SO_PEERCRED), so a forked child or a restored process is itself at once.
    bool call(Message request, Message* answer) {
        std::string error;
        int sock = kfddriver::connectDriver(root_, &error);
        if (sock < 0) {
            fprintf(stderr, "kfd driver preload: %s\n", error.c_str());
            return false;
        }
        bool done = kfddriver::exchange(sock, request, answer) == 0;
        if (!done)
            fprintf(stderr, "kfd driver preload: lost the driver at %s\n", root_.c_str());
        next<int (*)(int)>("close")(sock);
        return done;
    }

private:
    DriverLink() : root_(kfdinterpose::driverRootFromEnvironment("kfd driver preload")) {
        if (!root_.empty())
            sysfs_ = kfddriver::sysfsPath(root_);
    }

    std::string root_, sysfs_;
};

int fail(int negErrno) {
    errno = -negErrno;
    return -1;
}

std::string routed(const char* path) {
    DriverLink& link = DriverLink::get();
    // What /sys/dev/char shows of the render nodes (libdrm reads it of every render fd).
    static const std::string drmChar = "/sys/dev/char/226:"; // DRM_MAJOR
    if (path && link.active() && strncmp(path, drmChar.c_str(), drmChar.size()) == 0)
        return kfddriver::drmSysfsPath(link.root()) + "/" + (path + strlen("/sys/dev/char/"));
    return kfdinterpose::routedPathOf(path, link.sysfs());
}

/// open() of a device of the driver: the driver makes the file, and this process opens the node
/// the driver names for it.
int openDevice(const char* path, int flags) {
    Message request, answer;
    request.op = static_cast<uint32_t>(Op::Open);
    request.text = path;
    request.a = static_cast<uint64_t>(flags);
    if (!DriverLink::get().call(request, &answer))
        return fail(-EIO);
    if (answer.pid < 0)
        return fail(answer.pid);
    static auto realOpen = next<int (*)(const char*, int, ...)>("open");
    return realOpen(answer.text.c_str(), O_RDWR | (flags & O_CLOEXEC));
}

int openOrForward(const char* name, const char* path, int flags, mode_t mode) {
    if (DriverLink::get().active() && kfdinterpose::isDriverDevicePath(path))
        return openDevice(path, flags);
    return next<int (*)(const char*, int, ...)>(name)(routed(path).c_str(), flags, mode);
}

/// A DRM ioctl of a render node: the struct goes to the driver, which reads and writes the user
/// buffers it points at in this process's memory (render_node_protocol.h), and comes back as
/// the kernel leaves it.
int renderNodeIoctl(long file, unsigned long request, void* arg) {
    DriverLink& link = DriverLink::get();
    int r = kfddriver::drmUserIoctl(
        link.root(), file, request, arg,
        [&](const Message& m, Message* answer) { return link.call(m, answer); });
    return r < 0 ? fail(r) : r;
}

/// An ioctl on a file of the driver: the struct and the user buffers it points at go to the
/// driver, which copies its answer back as the kernel would.
int driverIoctl(long file, unsigned long request, void* arg) {
    if (_IOC_TYPE(request) == DRM_IOCTL_BASE || _IOC_TYPE(request) == SYNC_IOC_MAGIC)
        return renderNodeIoctl(file, request, arg); // a sync file's ioctls too

    if (_IOC_TYPE(request) != AMDKFD_IOCTL_BASE)
        return fail(-ENOTTY);
    DriverLink& link = DriverLink::get();
    int r = kfddriver::clientIoctl(
        file, request, arg, [&](int fd) { return static_cast<int64_t>(link.fileOf(fd)); },
        [&](const Message& m, Message* answer) { return link.call(m, answer); });
    return r < 0 ? fail(r) : r;
}

/// Where the machine's device the driver's file `fd` stands for lies at its /dev path (/dev/kfd,
/// /dev/dri/renderD<N>) as a node of the machine's memory (kfddriver::isMachineMemory: a private
/// mount namespace of the tests puts them there), an fd of that node, so that a mapping through
/// it is named by the device's path, as on a ROCm machine, and criu records that path; else -1
/// (the mapping is of `fd`'s own node, ROOT/files/ID/NAME). Either is the same memory.
int openDeviceNode(int fd) {
    std::string device = kfddriver::devicePathOfNode(kfddriver::linkOfFd(0, fd));
    static auto realStat = next<int (*)(const char*, struct stat*)>("stat");
    struct stat st {};
    if (device.empty() || realStat(device.c_str(), &st) != 0 ||
        !kfddriver::isMachineMemory(DriverLink::get().root(), st))
        return -1;
    static auto realOpen = next<int (*)(const char*, int, ...)>("open");
    return realOpen(device.c_str(), O_RDWR | O_CLOEXEC);
}

} // namespace

#define INTERPOSED extern "C" __attribute__((visibility("default")))

KFDINTERPOSE_OPEN(open, openOrForward)
KFDINTERPOSE_OPEN(open64, openOrForward)

namespace {

int ioctlOrForward(int fd, unsigned long request, void* arg) {
    long file = DriverLink::get().fileOf(fd);
    if (file >= 0)
        return driverIoctl(file, request, arg);
    static auto real = next<int (*)(int, unsigned long, ...)>("ioctl");
    return real(fd, request, arg);
}

} // namespace

KFDINTERPOSE_IOCTL(ioctlOrForward)

INTERPOSED void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
    static auto real = next<void* (*)(void*, size_t, int, int, int, off_t)>("mmap");
    long file = (flags & MAP_ANONYMOUS) ? -1 : DriverLink::get().fileOf(fd);
    if (file < 0)
        return real(addr, len, prot, flags, fd, offset);
    // kfd_mmap / amdgpu's GEM mmap: the driver checks the offset and says where in the machine's
    // memory it lies; the mapping is of this very fd (the loop device) there.
    Message m, answer;
    m.op = static_cast<uint32_t>(Op::Mapping);
    m.file = file;
    m.a = static_cast<uint64_t>(offset);
    m.b = len;
    if (!DriverLink::get().call(m, &answer)) {
        errno = EIO;
        return MAP_FAILED;
    }
    if (answer.pid < 0) {
        errno = -answer.pid;
        return MAP_FAILED;
    }
    int deviceFd = openDeviceNode(fd);
    void* at =
        real(addr, len, prot, flags, deviceFd >= 0 ? deviceFd : fd, static_cast<off_t>(answer.a));
    if (deviceFd >= 0) {
        int saved = errno;
        next<int (*)(int)>("close")(deviceFd);
        errno = saved;
    }
    return at;
}

INTERPOSED void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
    return mmap(addr, len, prot, flags, fd, offset);
}

INTERPOSED int fstat(int fd, struct stat* st) {
    long file = DriverLink::get().fileOf(fd);
    if (file < 0) {
        static auto real = next<int (*)(int, struct stat*)>("fstat");
        return real(fd, st);
    }
    Message m, answer;
    m.op = static_cast<uint32_t>(Op::Fstat);
    m.file = file;
    if (!DriverLink::get().call(m, &answer))
        return fail(-EIO);
    if (answer.pid < 0)
        return fail(answer.pid);
    if (answer.text.size() != sizeof(*st))
        return fail(-EIO);
    memcpy(st, answer.text.data(), sizeof(*st));
    return 0;
}

INTERPOSED int fstat64(int fd, struct stat64* st) {
    static_assert(sizeof(struct stat64) == sizeof(struct stat), "x86-64: stat64 is stat");
    return fstat(fd, reinterpret_cast<struct stat*>(st));
}

// A dma-buf's size is where SEEK_END puts it (libdrm_amdgpu's amdgpu_bo_import asks it so):
// dma_buf_llseek takes offset 0 from SEEK_SET or SEEK_END only. The driver's node is a block
// device the size of the machine's memory, so a dma-buf's seek is answered here.
INTERPOSED off_t lseek(int fd, off_t offset, int whence) {
    DriverLink& link = DriverLink::get();
    if (!link.active() || !kfddriver::isDmabufNode(link.root(), kfddriver::linkOfFd(0, fd))) {
        static auto real = next<off_t (*)(int, off_t, int)>("lseek");
        return real(fd, offset, whence);
    }
    if (offset != 0 || (whence != SEEK_SET && whence != SEEK_END))
        return fail(-EINVAL);
    struct stat st {};
    if (whence == SEEK_SET)
        return 0;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

INTERPOSED off64_t lseek64(int fd, off64_t offset, int whence) {
    return lseek(fd, offset, whence);
}

INTERPOSED int stat(const char* path, struct stat* st) {
    static auto real = next<int (*)(const char*, struct stat*)>("stat");
    return real(routed(path).c_str(), st);
}

INTERPOSED int stat64(const char* path, struct stat64* st) {
    static auto real = next<int (*)(const char*, struct stat64*)>("stat64");
    return real(routed(path).c_str(), st);
}

KFDINTERPOSE_SYSFS_READS(routed)

// libdrm's drmParseSubsystemType reads the link /sys/dev/char/226:N/device/subsystem (which bus
// the device is on) before it reads the device's PCI attributes (drmGetDevices2, as Mesa's RADV
// enumerates its GPUs).
INTERPOSED ssize_t readlink(const char* path, char* buf, size_t size) {
    static auto real = next<ssize_t (*)(const char*, char*, size_t)>("readlink");
    return real(routed(path).c_str(), buf, size);
}

// libdrm's drmOpenRender would, as root, mknod a missing /dev/dri/renderD<minor> of the host.
INTERPOSED int drmOpenRender(int minor) {
    if (DriverLink::get().active())
        return openDevice(("/dev/dri/renderD" + std::to_string(minor)).c_str(), O_RDWR | O_CLOEXEC);
    static auto real = next<int (*)(int)>("drmOpenRender");
    return real(minor);
}
