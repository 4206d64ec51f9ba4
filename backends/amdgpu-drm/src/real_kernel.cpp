// The real KernelInterface: one system call per method, nothing else; libdrm_amdgpu calls are
// the shared real Libdrm's.
// It is the only part of the backend tests cannot run; keep it that way.
#include "amdgpu-drm/kernel_interface.h"

#include "sdma/real_libdrm.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace drm {
namespace {

class RealKernel final : public KernelInterface {
public:
    int open(const std::string& path) override {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }
    void close(int fd) override { ::close(fd); }
    int dup(int fd) override {
        int r = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        return r >= 0 ? r : -errno;
    }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int r;
        do {
            r = ::ioctl(fd, request, arg);
        } while (r == -1 && (errno == EINTR || errno == EAGAIN));
        return r == 0 ? 0 : -errno;
    }
    int fstat(int fd, struct stat* st) override { return ::fstat(fd, st) == 0 ? 0 : -errno; }
    topology::DeviceNodeCalls& deviceNodes() override { return topology::systemDeviceNodeCalls(); }
    void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) override {
        void* p = ::mmap(nullptr, size, prot, MAP_SHARED, fd, static_cast<off_t>(offset));
        if (p != MAP_FAILED)
            return p;
        *err = errno;
        return nullptr;
    }
    void munmap(void* addr, uint64_t size) override { ::munmap(addr, size); }
    int pidGetFd(int pid, int targetFd) override {
        int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0)
            return -errno;
        int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, targetFd, 0));
        int err = errno;
        ::close(pidfd);
        return fd >= 0 ? fd : -err;
    }
    int sameFile(int pid1, int fd1, int pid2, int fd2) override {
        long r = ::syscall(SYS_kcmp, pid1, pid2, KCMP_FILE, fd1, fd2);
        if (r < 0)
            return -errno;
        return r == 0 ? 1 : 0; // kcmp orders different files as 1 or 2
    }
    int selfPid() override { return ::getpid(); }
    uint64_t monotonicNs() override {
        timespec ts{};
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    }

    sdma::Libdrm& libdrm() override { return *libdrm_; }
    const topology::sysfs::Dir& files() override { return topology::sysfs::realFileSystem(); }

private:
    std::unique_ptr<sdma::Libdrm> libdrm_ = sdma::makeRealLibdrm();
};

} // namespace

std::shared_ptr<KernelInterface> makeRealKernel() {
    return std::make_shared<RealKernel>();
}

} // namespace drm
