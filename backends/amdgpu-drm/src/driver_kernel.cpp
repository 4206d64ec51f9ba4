// The amdgpu-drm backend over a user-space KFD driver's render nodes (driver_kernel.h).
#include "driver_kernel.h"

#include "amdgpu-drm/paths.h"
#include "base/trusted_path.h"
#include "kfd/driver_kernel.h"
#include "kfd/driver_protocol.h"
#include "kfd/real_kernel.h"
#include "topology/sysfs.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace drm {
namespace {

using kfddriver::Message;
using kfddriver::Op;

class DriverRenderKernel final : public KernelInterface {
public:
    DriverRenderKernel(std::string root, std::shared_ptr<KernelInterface> real)
        : root_(std::move(root)), real_(std::move(real)),
          driver_(kfd::makeDriverKernel(root_, kfd::makeRealKernel())) {
        listRenderNodes();
    }

    int open(const std::string& path) override {
        if (renderMinorOfPath(path) < 0)
            return real_->open(path);
        return driver_->open(path, O_RDWR | O_CLOEXEC);
    }
    void close(int fd) override { real_->close(fd); }
    int dup(int fd) override { return real_->dup(fd); }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int64_t file = kfddriver::fileOfFd(root_, 0, fd);
        if (file < 0)
            return real_->ioctl(fd, request, arg);
        if (_IOC_TYPE(request) != DRM_IOCTL_BASE)
            return driver_->ioctl(fd, request, arg);
        int r = kfddriver::drmUserIoctl(
            file, request, arg, [this](const Message& m, Message* a) { return call(m, a) == 0; });
        return r < 0 ? r : 0;
    }
    int fstat(int fd, struct stat* st) override { return driver_->fstat(fd, st); }
    topology::DeviceNodeCalls& deviceNodes() override { return driver_->deviceNodes(); }
    void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) override {
        int64_t file = kfddriver::fileOfFd(root_, 0, fd);
        if (file < 0)
            return real_->mmap(fd, offset, size, prot, err);
        // amdgpu's GEM mmap: the driver checks the offset and says where in the machine's memory
        // the BO lies; the mapping is of this very fd (its loop device) there.
        Message m, answer;
        m.op = static_cast<uint32_t>(Op::Mapping);
        m.file = file;
        m.a = offset;
        m.b = size;
        int r = call(m, &answer);
        if (r == 0 && answer.pid < 0)
            r = static_cast<int>(answer.pid);
        if (r < 0) {
            *err = -r;
            return nullptr;
        }
        return real_->mmap(fd, answer.a, size, prot, err);
    }
    void munmap(void* addr, uint64_t size) override { real_->munmap(addr, size); }
    int pidGetFd(int pid, int targetFd) override { return real_->pidGetFd(pid, targetFd); }
    int sameFile(int pid1, int fd1, int pid2, int fd2) override {
        return real_->sameFile(pid1, fd1, pid2, fd2);
    }
    int selfPid() override { return real_->selfPid(); }
    uint64_t monotonicNs() override { return real_->monotonicNs(); }
    const topology::sysfs::Dir& files() override { return files_.root(); }
    sdma::Libdrm& libdrm() override { return driver_->libdrm(); }

private:
    /// One request on a connection of its own, closed before it returns: a socket made in a task
    /// criu restores stays in none of its fd numbers.
    int call(const Message& request, Message* answer) {
        std::string error;
        int sock = kfddriver::connectDriver(root_, &error);
        if (sock < 0)
            return -EIO;
        int r = kfddriver::exchange(sock, request, answer);
        ::close(sock);
        return r < 0 ? -EIO : 0;
    }

    /// /dev/dri of the machine: the render minor of each GPU of its topology that its /dev has.
    void listRenderNodes() {
        files_.addDir("/dev/dri");
        int err = 0;
        std::unique_ptr<topology::sysfs::Dir> nodes = topology::sysfs::realFileSystem().openDir(
            (kfddriver::sysfsPath(root_) + "/nodes").c_str(), &err);
        if (!nodes)
            return;
        for (unsigned node : nodes->numberedEntries(&err)) {
            std::string properties;
            if (nodes->readFile((std::to_string(node) + "/properties").c_str(), &properties) != 0)
                continue;
            size_t at = properties.find("drm_render_minor ");
            if (at == std::string::npos)
                continue;
            int minor = atoi(properties.c_str() + at + strlen("drm_render_minor "));
            std::string path = "/dev/dri/renderD" + std::to_string(minor);
            struct stat st {};
            if (minor > 0 && driver_->stat(path, &st) == 0)
                files_.addFile(path, "");
        }
    }

    std::string root_;
    std::shared_ptr<KernelInterface> real_;
    std::unique_ptr<kfd::KernelInterface> driver_;
    topology::sysfs::MemoryTree files_;
};

} // namespace

base::Result<std::shared_ptr<KernelInterface>> kernelFor(const settings::Settings& settings) {
    if (settings.kfdDriver.empty())
        return makeRealKernel();
    // The driver decides what the plugin does as root: only from a trusted root.
    HAL_TRY_ASSIGN(base::TrustedPath root, base::openTrustedPath(settings.kfdDriver, "kfd-driver",
                                                                 base::TrustedKind::Directory));
    return std::shared_ptr<KernelInterface>(
        std::make_shared<DriverRenderKernel>(root.resolved(), makeRealKernel()));
}

} // namespace drm
