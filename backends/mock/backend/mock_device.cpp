#include "mock_device.h"

#include "mockgpu/device_nodes.h"

#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

// What the mock's dump and restore share: the device's set-up, its staging buffer and lanes, and
// the GPUs and device nodes a process sees. The dump is in mock_dump.cpp, the restore in
// mock_restore.cpp and mock_parallel_restore.cpp.

namespace mock {

uint32_t mockBoDomains(uint32_t flags) {
    const uint32_t kGemDomainGtt = 0x2, kGemDomainVram = 0x4; // amdgpu_drm.h
    uint32_t domains = ((flags & 1) ? kGemDomainVram : 0) | ((flags & 2) ? kGemDomainGtt : 0);
    return domains ? domains : kGemDomainGtt;
}

MockDevice::MockDevice(hal::DeviceEnv env, std::string root, MachineConfig config)
    : hal::Device("mock", env), root_(std::move(root)), config_(config) {
    // Unique enough among concurrent restores of one machine: pid and time. The pid stays
    // readable: the reaper frees what a restore whose criu died left behind.
    restoreSession_ = restoreSessionOf(
        getpid(),
        static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
}

content::StagingBuffer& MockDevice::staging() {
    if (!staging_)
        staging_ =
            std::make_unique<content::StagingBuffer>(settings::stagingBufferSize(settings()));
    return *staging_;
}

std::span<std::byte> MockDevice::laneStaging(std::span<std::byte> staging) {
    // The mock's device copy is a CPU copy (read/write of the driver's files), not a DMA engine:
    // slots of 2 MiB keep each chunk in the CPU's cache from the copy and its checksum to the
    // image I/O. Measured with real criu (bench.mock_throughput): 16 MiB slots made every byte go
    // through memory twice more (0.71 of cat at dump), 4 MiB ran no faster than 2 and held more
    // memory, 1 MiB and 512 KiB paid more per-chunk overhead.
    constexpr size_t kCpuCopySlot = 2 << 20;
    return staging.first(std::min(staging.size(), kCpuCopySlot * hal::kLaneSlots));
}

base::Result<topology::Topology> MockDevice::localTopologyImpl() {
    return readMachineTopology(root_);
}

std::string MockDevice::restoreDevDir() const {
    return settings().devRoot.empty() ? restoreDevDir_ : settings().devRoot;
}

base::Result<std::optional<std::set<uint32_t>>> MockDevice::usableGpuIdsImpl() {
    std::string dir = restoreDevDir();
    if (dir.empty())
        return std::optional<std::set<uint32_t>>();
    HAL_TRY_ASSIGN(topology::Topology topo, localTopologyImpl());
    std::set<uint32_t> usable;
    std::vector<std::string> leftOut;
    for (const topology::Node* gpu :
         visibleGpus(deviceNodeCalls(), topo, dir, config_.deviceRdev, absentNodes(), &leftOut))
        usable.insert(gpu->gpuId);
    for (const std::string& why : leftOut)
        HAL_LOG_INFO("mock: not this process's GPU: %s", why.c_str());
    return std::optional<std::set<uint32_t>>(std::move(usable));
}

base::Result<void> MockDevice::ensureDeviceNode(const topology::Node& gpu) {
    std::string dir = restoreDevDir();
    if (dir.empty())
        return base::success();
    return giveRenderNode(deviceNodeCalls(), dir, gpu.renderMinor(), gpu.gpuId);
}

std::string MockDevice::deviceViewImpl() {
    std::string dir = restoreDevDir();
    return dir.empty() ? "" : describeDeviceView(dir);
}

} // namespace mock
