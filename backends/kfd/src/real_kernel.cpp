#include "kfd/real_kernel.h"

#include "sdma/real_libdrm.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace kfd {
namespace {

int negErrno(int r) {
    return r < 0 ? -errno : r;
}

class RealKernel final : public KernelInterface {
public:
    explicit RealKernel(int stopWaitMs) : stopWaitMs_(stopWaitMs) {}

    int open(const std::string& path, int flags) override {
        return negErrno(::open(path.c_str(), flags | O_CLOEXEC));
    }
    int close(int fd) override { return negErrno(::close(fd)); }
    int dup(int fd) override { return negErrno(fcntl(fd, F_DUPFD_CLOEXEC, 0)); }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int r;
        do {
            r = ::ioctl(fd, request, arg);
        } while (r < 0 && (errno == EINTR || errno == EAGAIN));
        return negErrno(r);
    }
    int stat(const std::string& path, struct stat* st) override {
        return negErrno(::stat(path.c_str(), st));
    }
    int fstat(int fd, struct stat* st) override { return negErrno(::fstat(fd, st)); }
    topology::DeviceNodeCalls& deviceNodes() override { return topology::systemDeviceNodeCalls(); }
    int sameFile(int fdA, int fdB) override {
        long r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, fdA, fdB);
        return r < 0 ? -errno : (r == 0 ? 1 : 0);
    }
    int listPids(std::vector<int>* pids) override {
        DIR* d = opendir("/proc");
        if (!d)
            return -errno;
        while (struct dirent* e = readdir(d))
            if (int pid = atoi(e->d_name); pid > 0)
                pids->push_back(pid);
        closedir(d);
        return 0;
    }
    int listProcessFds(int pid, std::vector<ProcFd>* fds) override {
        std::string dir = "/proc/" + std::to_string(pid) + "/fd";
        DIR* d = opendir(dir.c_str());
        if (!d)
            return -errno;
        while (struct dirent* e = readdir(d)) {
            ProcFd f;
            if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &f.st, 0) != 0)
                continue;
            f.fd = atoi(e->d_name);
            fds->push_back(f);
        }
        closedir(d);
        return 0;
    }
    int pidGetFd(int pid, int targetFd) override {
        int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0)
            return -errno;
        int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, targetFd, 0));
        int err = errno;
        ::close(pidfd);
        return fd < 0 ? -err : fd;
    }
    int ptraceSeize(int pid) override {
        return ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) == 0 ? 0 : -errno;
    }
    int ptraceDetach(int pid) override {
        // PTRACE_DETACH needs the tracee in a ptrace stop: interrupt it, wait for that stop (or
        // its end), then let it go with no signal. A task that cannot stop (a frozen cgroup, an
        // uninterruptible sleep) is waited for no longer than stopWaitMs_.
        if (ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr) != 0)
            return -errno;
        int status = 0;
        if (int r = waitForStop(pid, &status); r < 0)
            return r;
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return 0;
        // A signal that arrived before the interrupt's stop is handed on, not swallowed.
        long sig = (status >> 16) == 0 && WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
        return ptrace(PTRACE_DETACH, pid, nullptr, reinterpret_cast<void*>(sig)) == 0 ? 0 : -errno;
    }
    sdma::Libdrm& libdrm() override { return *libdrm_; }

private:
    /// waitpid(__WALL) of a tracee, polled until it reports or stopWaitMs_ passed: 0 with its
    /// status, -ETIMEDOUT, or -errno.
    int waitForStop(int pid, int* status) const {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(stopWaitMs_);
        auto pause = std::chrono::microseconds(100);
        for (;;) {
            pid_t w = waitpid(pid, status, __WALL | WNOHANG);
            if (w == pid)
                return 0;
            if (w < 0 && errno != EINTR)
                return -errno;
            if (std::chrono::steady_clock::now() >= deadline)
                return -ETIMEDOUT;
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(20000));
        }
    }

    int stopWaitMs_;
    std::unique_ptr<sdma::Libdrm> libdrm_ = sdma::makeRealLibdrm();
};

} // namespace

std::unique_ptr<KernelInterface> makeRealKernel(int stopWaitMs) {
    return std::make_unique<RealKernel>(stopWaitMs);
}

} // namespace kfd
