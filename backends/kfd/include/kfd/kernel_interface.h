#pragma once
/// \file
/// The one boundary between the KFD backend and the machine: every system call, ioctl and
/// libdrm_amdgpu call the backend makes goes through KernelInterface. The real implementation
/// (real_kernel.cpp) is a few lines per call; tests substitute a stateful fake that implements the
/// same semantics on the same structs, so every decision above this line runs in tests.
///
/// Convention: calls return 0 (or a non-negative fd) on success and a negative errno on failure,
/// as the kernel and libdrm do.

#include "sdma/libdrm.h"

#include "topology/render_node_access.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kfd {

/// One entry of /proc/<pid>/fd: the fd number and what stat() says of its target.
struct ProcFd {
    int fd = -1;
    struct stat st {};
};

/// Every call the backend makes into the kernel or libdrm_amdgpu.
class KernelInterface {
public:
    virtual ~KernelInterface() = default;

    // ------------------------------------------------------------------ files and ioctls
    /// open(2): an fd or -errno.
    virtual int open(const std::string& path, int flags) = 0;
    /// close(2): 0 or -errno.
    virtual int close(int fd) = 0;
    /// fcntl(F_DUPFD_CLOEXEC): a new fd for the same open file, or -errno.
    virtual int dup(int fd) = 0;
    /// ioctl(2): 0 or -errno. `arg` points at the request's struct.
    virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
    /// stat(2) of a path: 0 or -errno.
    virtual int stat(const std::string& path, struct stat* st) = 0;
    /// fstat(2): 0 or -errno.
    virtual int fstat(int fd, struct stat* st) = 0;
    /// The calls that probe and make device nodes (topology/render_node_access.h), as the kernel
    /// answers them here.
    virtual topology::DeviceNodeCalls& deviceNodes() = 0;
    /// kcmp(KCMP_FILE) of two fds of this process: 1 when they are the same open file, 0 when
    /// not, -errno on failure.
    virtual int sameFile(int fdA, int fdB) = 0;

    // ---------------------------------------------------------------------- processes
    /// The pids of /proc (host pid namespace): 0 or -errno.
    virtual int listPids(std::vector<int>* pids) = 0;
    /// The fds of /proc/<pid>/fd with the stat of each target: 0 or -errno.
    virtual int listProcessFds(int pid, std::vector<ProcFd>* fds) = 0;
    /// pidfd_getfd(2): this process's copy of fd `targetFd` of `pid`, or -errno.
    virtual int pidGetFd(int pid, int targetFd) = 0;
    /// ptrace(PTRACE_SEIZE) of `pid` without stopping it: 0 or -errno (-EPERM while another
    /// tracer holds it, -ESRCH when it is gone). KFD lets only a process and its ptrace parent use
    /// its KFD file, so a process that is not criu becomes the tracer to unpause it.
    virtual int ptraceSeize(int pid) = 0;
    /// Lets a process seized by ptraceSeize go, running as before: 0 or -errno; -ETIMEDOUT when
    /// it did not stop for the detach within a bound (it stays attached until this process ends).
    virtual int ptraceDetach(int pid) = 0;

    // ---------------------------------------------------------------- libdrm_amdgpu
    /// The libdrm_amdgpu calls of the SDMA copies (the shared SDMA engine makes them).
    virtual sdma::Libdrm& libdrm() = 0;
};

/// An fd of a KernelInterface closed when the object goes away.
class KernelFd {
public:
    KernelFd() = default;
    KernelFd(KernelInterface* kernel, int fd) : kernel_(kernel), fd_(fd) {}
    ~KernelFd() { reset(); }
    KernelFd(KernelFd&& other) noexcept : kernel_(other.kernel_), fd_(other.release()) {}
    KernelFd& operator=(KernelFd&& other) noexcept {
        if (this != &other) {
            reset();
            kernel_ = other.kernel_;
            fd_ = other.release();
        }
        return *this;
    }
    KernelFd(const KernelFd&) = delete;
    KernelFd& operator=(const KernelFd&) = delete;

    /// The fd, -1 when empty.
    int get() const { return fd_; }
    /// True when it holds an fd.
    bool valid() const { return fd_ >= 0; }
    /// Gives up ownership.
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    /// Closes the fd (if any).
    void reset() {
        if (fd_ >= 0 && kernel_)
            kernel_->close(fd_);
        fd_ = -1;
    }

private:
    KernelInterface* kernel_ = nullptr;
    int fd_ = -1;
};

} // namespace kfd
