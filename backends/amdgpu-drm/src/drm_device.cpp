// The parts of DrmDevice shared by dump and restore: construction, the staging buffer, SDMA
// engines and the local topology.
#include "drm_device.h"

#include "base/log.h"

#include <sys/sysmacros.h>

#include <filesystem>

namespace drm {

using base::ErrorCode;

DrmDevice::DrmDevice(hal::DeviceEnv env, std::shared_ptr<KernelInterface> kernel, Paths paths)
    : hal::Device(kBackendName, env), kernel_(std::move(kernel)), calls_(*kernel_),
      paths_(std::move(paths)) {}

DrmDevice::~DrmDevice() {
    engines_.clear();
    for (DumpNode& node : dumpNodes_)
        if (node.fd >= 0)
            kernel_->close(node.fd);
    for (RestoredFile& file : restored_)
        if (file.fd >= 0)
            kernel_->close(file.fd);
}

bool DrmDevice::isAmdgpuRenderNode(int fd) {
    // What the device says of the file, not criu's stat: the same on a real kernel (the fd is
    // that file), and a user-space KFD driver's render nodes are block nodes to the kernel.
    struct stat st {};
    if (kernel_->fstat(fd, &st) < 0)
        return false;
    if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != kDrmMajor ||
        minor(st.st_rdev) < kFirstRenderMinor)
        return false;
    return isAmdgpuNode(readRenderNodeSysfs(kernel_->files(), paths_, minor(st.st_rdev)), calls_,
                        fd);
}

base::Result<content::StagingBuffer*> DrmDevice::staging() {
    if (!staging_)
        staging_ =
            std::make_unique<content::StagingBuffer>(settings::stagingBufferSize(settings()));
    return staging_.get();
}

base::Result<sdma::Engine*> DrmDevice::engineFor(unsigned minor, int fd) {
    auto it = engines_.find(minor);
    if (it != engines_.end())
        return it->second.get();
    HAL_TRY_ASSIGN_CONTEXT(GpuInfo info, queryGpuInfo(calls_, fd),
                           "while identifying renderD%u for SDMA copies", minor);
    if (info.dev.family < AMDGPU_FAMILY_AI)
        return base::makeError(ErrorCode::NotSupported,
                               "renderD%u: SDMA copies need a gfx9 or newer GPU (family %u); BOs "
                               "the CPU cannot map cannot be saved on this GPU",
                               minor, info.dev.family);
    HAL_TRY_ASSIGN(content::StagingBuffer * buffer, staging());
    sdma::EngineOptions options{paths_.renderNodePath(minor), "renderD" + std::to_string(minor),
                                hal::kLaneSlots};
    HAL_TRY_ASSIGN(auto engine, sdma::Engine::open(kernel_->libdrm(), options, buffer->span()));
    sdma::Engine* raw = engine.get();
    engines_[minor] = std::move(engine);
    return raw;
}

base::Result<std::unique_ptr<SdmaBo>> DrmDevice::bindSdma(unsigned minor, int fd, uint32_t handle,
                                                          uint64_t size) {
    HAL_TRY_ASSIGN(sdma::Engine * engine, engineFor(minor, fd));
    HAL_TRY_ASSIGN(int dmabuf, calls_.exportDmabuf(fd, handle));
    auto bound = SdmaBo::bind(*engine, dmabuf, size);
    kernel_->close(dmabuf);
    return bound;
}

base::Result<topology::Topology> DrmDevice::localTopologyImpl() {
    if (!localTopology_) {
        std::error_code ec;
        localFromKfd_ = std::filesystem::exists(paths_.kfdRoot() + "/nodes", ec);
        HAL_TRY_ASSIGN(topology::Topology topo, readLocalTopology(*kernel_, paths_));
        for (const std::string& note : topo.notes)
            HAL_LOG_DEBUG("%s: %s", kBackendName, note.c_str());
        localTopology_ = std::move(topo);
    }
    return *localTopology_;
}

base::Result<std::optional<std::set<uint32_t>>> DrmDevice::usableGpuIdsImpl() {
    // Render-node topologies hold only GPUs whose node opened; KFD's lists every GPU of the host,
    // of which a container may use a few: offer only those the kernel lets this process open (a
    // restored container's /dev holds the old pod's nodes; its device cgroup is the new pod's).
    HAL_TRY_ASSIGN(topology::Topology topo, localTopologyImpl());
    if (!localFromKfd_)
        return std::optional<std::set<uint32_t>>();
    return std::optional<std::set<uint32_t>>(
        gpusThisProcessMayOpen(kernel_->deviceNodes(), topo, paths_.devRoot));
}

base::Result<uint32_t> DrmDevice::gpuIdOfMinor(unsigned minor) {
    HAL_TRY_ASSIGN(topology::Topology topo, localTopologyImpl());
    const topology::Node* node = topo.findRenderMinor(static_cast<int>(minor));
    if (!node)
        return base::makeError(ErrorCode::Topology, "renderD%u is not a GPU of %s", minor,
                               topo.source.c_str());
    return node->gpuId;
}

} // namespace drm
