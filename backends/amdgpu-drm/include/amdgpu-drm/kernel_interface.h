#pragma once
/// \file
/// The one boundary between the render-node backend and the outside world: every system call and
/// every libdrm_amdgpu call the backend makes goes through KernelInterface. The real implementation
/// (real_kernel.cpp) forwards each method to one call; tests substitute a stateful fake render
/// node that implements the same semantics, so all other backend code runs unchanged in tests.
/// Methods return 0 or a negative errno, as the calls they stand for do.

#include "sdma/libdrm.h"
#include "topology/render_node_access.h"
#include "topology/sysfs_tree.h"

#include <libdrm/amdgpu.h>
#include <libdrm/amdgpu_drm.h>

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>

namespace drm {

/// System calls, one method each, and the libdrm_amdgpu calls.
class KernelInterface {
public:
    virtual ~KernelInterface() = default;

    // ------------------------------------------------------------------ system calls
    /// open(path, O_RDWR | O_CLOEXEC): an fd, or -errno.
    virtual int open(const std::string& path) = 0;
    /// close(fd).
    virtual void close(int fd) = 0;
    /// fcntl(fd, F_DUPFD_CLOEXEC, 0): a new fd, or -errno.
    virtual int dup(int fd) = 0;
    /// ioctl(fd, request, arg), retried on EINTR/EAGAIN: 0, or -errno.
    virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
    /// fstat(fd, st): 0, or -errno.
    virtual int fstat(int fd, struct stat* st) = 0;
    /// The calls that probe and make device nodes (topology/render_node_access.h), as the kernel
    /// answers them here.
    virtual topology::DeviceNodeCalls& deviceNodes() = 0;
    /// mmap(nullptr, size, prot, MAP_SHARED, fd, offset): the address, or nullptr (errno in *err).
    virtual void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) = 0;
    /// munmap(addr, size).
    virtual void munmap(void* addr, uint64_t size) = 0;
    /// pidfd_getfd(pidfd_open(pid), targetFd): our own fd for the same open file, or -errno.
    virtual int pidGetFd(int pid, int targetFd) = 0;
    /// kcmp(pid1, pid2, KCMP_FILE, fd1, fd2): 1 when both fds are the same open file, 0 when
    /// not, -errno on failure (the convention of the kfd backend's sameFile).
    virtual int sameFile(int pid1, int fd1, int pid2, int fd2) = 0;
    /// getpid().
    virtual int selfPid() = 0;
    /// clock_gettime(CLOCK_MONOTONIC) in ns: the clock of absolute amdgpu ioctl timeouts.
    virtual uint64_t monotonicNs() = 0;
    /// The files the backend reads to find render nodes and what sysfs says of them (`/dev/dri`,
    /// `/sys/class/drm`, KFD's topology tree): the real file system
    /// (topology::sysfs::realFileSystem).
    virtual const topology::sysfs::Dir& files() = 0;

    // ------------------------------------------------------------ libdrm_amdgpu calls
    /// The libdrm_amdgpu calls of SDMA copies (the shared SDMA engine makes them).
    virtual sdma::Libdrm& libdrm() = 0;
};

/// The implementation that issues the real calls (only in the backend library).
std::shared_ptr<KernelInterface> makeRealKernel();

} // namespace drm
