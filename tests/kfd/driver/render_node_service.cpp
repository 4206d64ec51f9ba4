#include "render_node_service.h"

#include "amdgpu-drm/paths.h"
#include "drm_user_buffers.h"
#include "uapi.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kfddriver {

RenderNodeService::RenderNodeService(const std::string& root, std::shared_ptr<LoopMemory> memory)
    : root_(root), memory_(std::move(memory)) {
    kernel_.setBoPlacement(this);
}

RenderNodeService::~RenderNodeService() {
    for (const auto& [id, fd] : fds_)
        kernel_.close(fd);
    for (const auto& [id, dmabuf] : dmabufs_)
        kernel_.close(dmabuf.fakeFd);
    for (const auto& [id, fenceFile] : fenceFiles_)
        kernel_.close(fenceFile.fakeFd);
}

int RenderNodeService::opened(int64_t id, const std::string& path) {
    int minor = drm::renderMinorOfPath(path);
    if (minor < 0)
        return 0; // /dev/kfd
    // /sys/dev/char/226:MINOR/device/drm lists the device's nodes: its card (minor - 128, the
    // primary node of a render node's device) and the render node.
    std::error_code error;
    std::string drmDir = drmSysfsPath(root_) + "/" + std::to_string(drm::kDrmMajor) + ":" +
                         std::to_string(minor) + "/device/drm";
    for (const std::string& node :
         {"card" + std::to_string(minor - 128), "renderD" + std::to_string(minor)})
        if (!std::filesystem::create_directories(drmDir + "/" + node, error) && error)
            return -error.value();
    fakedrm::GpuSpec spec;
    spec.minor = static_cast<unsigned>(minor);
    kernel_.addGpu(spec);
    int fd = kernel_.open(path);
    if (fd < 0)
        return fd;
    fds_[id] = fd;
    return 0;
}

bool RenderNodeService::failIoctl(const std::string& name, int err, int nth) {
    unsigned long request = servedDrmRequestNamed(name);
    if (request == 0)
        return false;
    kernel_.failIoctl(request, nth, err);
    return true;
}

Message RenderNodeService::ioctl(pid_t caller, const Message& request) {
    Message answer;
    auto file = fds_.find(request.file);
    unsigned long number = request.a;
    if (file == fds_.end()) {
        if (isFenceFile(request.file))
            return fenceFileIoctl(caller, request);
        answer.pid = -ENOTTY; // /dev/kfd answers no DRM ioctl
        return answer;
    }
    unsigned long served = servedDrmRequest(number);
    if (!served || request.text.size() != _IOC_SIZE(number)) {
        answer.pid = served ? -EFAULT : -ENOTTY;
        return answer;
    }
    // drm_ioctl: the struct of the kernel's size, what the caller gave copied in when both
    // directions say so, the rest zero; out again when both say so.
    std::string arg(_IOC_SIZE(served), '\0');
    size_t common = std::min(arg.size(), request.text.size());
    if (_IOC_DIR(number) & _IOC_DIR(served) & _IOC_WRITE)
        memcpy(arg.data(), request.text.data(), common);
    DrmUserBuffers user(caller);
    answer.pid = user.copyIn(served, arg.data());
    bool readWrite = false;
    if (answer.pid == 0)
        answer.pid = dispatch(file->second, served, arg.data(), &readWrite);
    answer.a = readWrite ? 1 : 0;
    if (answer.pid >= 0)
        if (int r = user.copyOut(); r < 0)
            answer.pid = r;
    // The struct goes out whatever the result, with the caller's own pointers.
    user.restorePointers();
    if (_IOC_DIR(number) & _IOC_DIR(served) & _IOC_READ) {
        answer.text = request.text;
        memcpy(answer.text.data(), arg.data(), common);
    }
    return answer;
}

int RenderNodeService::dispatch(int fd, unsigned long request, void* arg, bool* readWrite) {
    switch (request) {
    case DRM_IOCTL_PRIME_HANDLE_TO_FD:
        return primeExport(fd, arg, readWrite);
    case DRM_IOCTL_PRIME_FD_TO_HANDLE:
        return primeImport(fd, arg);
    case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD:
        return syncobjExport(fd, arg);
    case DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE:
        return syncobjImport(fd, arg);
    default:
        return kernel_.ioctl(fd, request, arg);
    }
}

int RenderNodeService::mapping(int64_t id, uint64_t offset, uint64_t len, uint64_t* where) {
    auto file = fds_.find(id);
    if (file == fds_.end())
        return -EACCES;
    int err = 0;
    // drm_gem_mmap: the range lies in a BO the file holds a handle to.
    if (!kernel_.mmap(file->second, offset, len, PROT_READ | PROT_WRITE, &err))
        return -err;
    *where = offset; // a BO lies at its mmap offset
    return 0;
}

int RenderNodeService::place(uint64_t size, fakedrm::PlacedMemory* out) {
    constexpr uint64_t kAlign = 2ull << 20;
    uint64_t offset = nextOffset_;
    if (size > LoopMemory::kKfdPageBase - offset)
        return -ENOMEM;
    void* bytes = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory_->fd(),
                       static_cast<off_t>(offset));
    if (bytes == MAP_FAILED)
        return -errno;
    nextOffset_ += (size + kAlign - 1) / kAlign * kAlign; // never reused: fresh memory is zero
    out->bytes = static_cast<std::byte*>(bytes);
    out->offset = offset;
    out->keep = std::shared_ptr<void>(bytes, [size](void* p) { munmap(p, size); });
    return 0;
}

} // namespace kfddriver
