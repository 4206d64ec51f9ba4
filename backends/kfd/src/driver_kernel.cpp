// DriverKernel: the KFD backend over a user-space KFD driver (kfd/driver_kernel.h).
#include "kfd/driver_kernel.h"

#include "base/trusted_path.h"
#include "driver_libdrm.h"
#include "driver_link.h"
#include "kfd/kfd_uapi.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kfd {

namespace {

using kfddriver::Message;
using kfddriver::Op;

/// The paths the driver serves: its machine's /dev/kfd and render nodes.
bool isDevicePath(const std::string& path) {
    return path == "/dev/kfd" || path.rfind("/dev/dri/renderD", 0) == 0;
}

class DriverKernel;

/// The probes of render nodes (topology/render_node_access.h) as the driver's /dev answers them;
/// the driver's nodes are never made or removed by the backend.
class DriverNodeCalls final : public topology::DeviceNodeCalls {
public:
    explicit DriverNodeCalls(KernelInterface& kernel) : kernel_(kernel) {}
    int statPath(const std::string& path, struct stat* st) override {
        return kernel_.stat(path, st);
    }
    int openNode(const std::string& path) override { return kernel_.open(path, O_RDWR); }
    void closeNode(int fd) override { kernel_.close(fd); }
    int makeCharNode(const std::string&, mode_t, dev_t, uid_t, gid_t) override { return -EROFS; }
    int unlinkPath(const std::string&) override { return -EROFS; }
    int makeDir(const std::string&, mode_t) override { return -EROFS; }

private:
    KernelInterface& kernel_;
};

class DriverKernel final : public KernelInterface {
public:
    DriverKernel(const std::string& root, std::unique_ptr<KernelInterface> real)
        : link_(root), real_(std::move(real)), libdrm_(makeDriverLibdrm(link_)) {}

    int open(const std::string& path, int flags) override {
        if (!isDevicePath(path))
            return real_->open(path, flags);
        Message m, answer;
        m.op = static_cast<uint32_t>(Op::Open);
        m.text = path;
        m.a = static_cast<uint64_t>(flags);
        if (!link_.call(m, &answer))
            return -EIO;
        if (answer.pid < 0)
            return answer.pid;
        return openNode(answer.text);
    }
    int close(int fd) override { return real_->close(fd); }
    int dup(int fd) override { return real_->dup(fd); }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int64_t file = link_.fileOf(fd);
        if (file < 0)
            return real_->ioctl(fd, request, arg);
        if (request == AMDKFD_IOC_CRIU_OP && arg)
            return criuOp(file, static_cast<kfd_ioctl_criu_args*>(arg));
        return driverIoctl(file, request, arg);
    }
    int stat(const std::string& path, struct stat* st) override {
        if (!isDevicePath(path))
            return real_->stat(path, st);
        Message m;
        m.op = static_cast<uint32_t>(Op::Stat);
        m.text = path;
        return statAnswer(m, st);
    }
    int fstat(int fd, struct stat* st) override {
        if (int64_t file = link_.fileOf(fd); file >= 0)
            return fileStat(file, st);
        if (int r = real_->fstat(fd, st); r < 0)
            return r;
        return asDevice(kfddriver::linkOfFd(0, fd), st);
    }
    topology::DeviceNodeCalls& deviceNodes() override { return nodes_; }
    int sameFile(int fdA, int fdB) override { return real_->sameFile(fdA, fdB); }
    int listPids(std::vector<int>* pids) override { return real_->listPids(pids); }
    int listProcessFds(int pid, std::vector<ProcFd>* fds) override {
        // The kernel says block device 7:N of a driver's file; the driver says what it is.
        if (int r = real_->listProcessFds(pid, fds); r < 0)
            return r;
        for (ProcFd& f : *fds) {
            int64_t file = kfddriver::fileOfFd(link_.root(), pid, f.fd);
            int r =
                file >= 0 ? fileStat(file, &f.st) : asDevice(kfddriver::linkOfFd(pid, f.fd), &f.st);
            if (r < 0)
                return r;
        }
        return 0;
    }
    int pidGetFd(int pid, int targetFd) override { return real_->pidGetFd(pid, targetFd); }
    int ptraceSeize(int pid) override { return real_->ptraceSeize(pid); }
    int ptraceDetach(int pid) override { return real_->ptraceDetach(pid); }
    sdma::Libdrm& libdrm() override { return *libdrm_; }

private:
    /// This process's fd of a node of the driver.
    static int openNode(const std::string& node) {
        int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
    }

    int driverIoctl(int64_t file, unsigned long request, void* arg) {
        return kfddriver::clientIoctl(
            file, request, arg, [this](int fd) { return link_.fileOf(fd); },
            [this](const Message& m, Message* answer) { return link_.call(m, answer); });
    }

    /// AMDKFD_IOC_CRIU_OP: RESTORE's device buckets name render nodes by fd (the driver's file
    /// ids for the driver); CHECKPOINT and RESTORE answer a dmabuf fd per BO with contents (the
    /// driver's file ids), which become fds of this process of their nodes.
    int criuOp(int64_t file, kfd_ioctl_criu_args* args) {
        auto* devices =
            reinterpret_cast<kfd_criu_device_bucket*>(static_cast<uintptr_t>(args->devices));
        std::vector<uint32_t> drmFds;
        if (args->op == KFD_CRIU_OP_RESTORE && devices)
            for (uint32_t i = 0; i < args->num_devices; ++i) {
                drmFds.push_back(devices[i].drm_fd);
                devices[i].drm_fd =
                    static_cast<uint32_t>(link_.fileOf(static_cast<int>(devices[i].drm_fd)));
            }
        int r = driverIoctl(file, AMDKFD_IOC_CRIU_OP, args);
        for (size_t i = 0; i < drmFds.size(); ++i)
            devices[i].drm_fd = drmFds[i];
        bool answersDmabufs = args->op == KFD_CRIU_OP_CHECKPOINT || args->op == KFD_CRIU_OP_RESTORE;
        auto* bos = reinterpret_cast<kfd_criu_bo_bucket*>(static_cast<uintptr_t>(args->bos));
        if (r < 0 || !answersDmabufs || !bos)
            return r;
        int failed = 0;
        for (uint32_t i = 0; i < args->num_bos; ++i) {
            if (bos[i].dmabuf_fd == kInvalidFd)
                continue;
            int fd =
                failed ? -1 : openNode(kfddriver::dmabufNodePath(link_.root(), bos[i].dmabuf_fd));
            if (fd < 0 && !failed)
                failed = fd;
            bos[i].dmabuf_fd = fd < 0 ? kInvalidFd : static_cast<uint32_t>(fd);
        }
        if (failed)
            for (uint32_t i = 0; i < args->num_bos; ++i)
                if (bos[i].dmabuf_fd != kInvalidFd) {
                    ::close(static_cast<int>(bos[i].dmabuf_fd));
                    bos[i].dmabuf_fd = kInvalidFd;
                }
        return failed ? failed : r;
    }

    int asDevice(const std::string& path, struct stat* st) {
        return asMachineDevice(*this, link_.root(), path, st);
    }

    int fileStat(int64_t file, struct stat* st) {
        Message m;
        m.op = static_cast<uint32_t>(Op::Fstat);
        m.file = file;
        return statAnswer(m, st);
    }

    int statAnswer(const Message& request, struct stat* st) {
        Message answer;
        if (!link_.call(request, &answer))
            return -EIO;
        if (answer.pid < 0)
            return answer.pid;
        if (answer.text.size() != sizeof(*st))
            return -EPROTO;
        memcpy(st, answer.text.data(), sizeof(*st));
        return 0;
    }

    DriverLink link_;
    std::unique_ptr<KernelInterface> real_;
    std::unique_ptr<sdma::Libdrm> libdrm_;
    DriverNodeCalls nodes_{*this};
};

} // namespace

int asMachineDevice(KernelInterface& driverKernel, const std::string& root, const std::string& path,
                    struct stat* st) {
    if (!isDevicePath(path) || !kfddriver::isMachineMemory(root, *st))
        return 0;
    struct stat device {};
    if (int r = driverKernel.stat(path, &device); r < 0)
        return r;
    st->st_mode = (st->st_mode & ~S_IFMT) | (device.st_mode & S_IFMT);
    st->st_rdev = device.st_rdev;
    return 0;
}

std::unique_ptr<KernelInterface> makeDriverKernel(const std::string& root,
                                                  std::unique_ptr<KernelInterface> real) {
    return std::make_unique<DriverKernel>(root, std::move(real));
}

base::Result<std::shared_ptr<KernelInterface>>
kernelFor(const settings::Settings& settings,
          const std::function<std::unique_ptr<KernelInterface>()>& makeReal) {
    if (settings.kfdDriver.empty())
        return std::shared_ptr<KernelInterface>(makeReal());
    // The driver decides what the plugin does as root: only from a trusted root.
    HAL_TRY_ASSIGN(base::TrustedPath root, base::openTrustedPath(settings.kfdDriver, "kfd-driver",
                                                                 base::TrustedKind::Directory));
    return std::shared_ptr<KernelInterface>(makeDriverKernel(root.resolved(), makeReal()));
}

} // namespace kfd
