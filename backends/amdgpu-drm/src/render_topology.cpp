#include "render_topology.h"

#include "base/log.h"
#include "topology/gpu_id.h"
#include "topology/sysfs.h"

#include <cerrno>
#include <cstring>
#include <set>

namespace drm {

using base::ErrorCode;

base::Result<GpuInfo> queryGpuInfo(DrmCalls& calls, int fd) {
    GpuInfo info;
    HAL_TRY_CONTEXT(calls.info(fd, AMDGPU_INFO_DEV_INFO, &info.dev, sizeof info.dev),
                    "while reading AMDGPU_INFO_DEV_INFO");
    HAL_TRY_CONTEXT(calls.info(fd, AMDGPU_INFO_VRAM_GTT, &info.vram, sizeof info.vram),
                    "while reading AMDGPU_INFO_VRAM_GTT");
    // A kernel answers EINVAL for a firmware or IP type it does not know: that GPU reports none
    // (0). Any other failure is one (the fault sweep of issue 55 found an EIO here read as
    // firmware 0, and the restore then refusing every GPU for its "older firmware").
    auto optional = [&](uint32_t query, void* out, uint32_t size, const drm_amdgpu_info& q,
                        const char* what) -> base::Result<bool> {
        auto r = calls.info(fd, query, out, size, &q);
        if (r.ok())
            return true;
        if (r.error().sysErrno() == EINVAL)
            return false;
        return std::move(r.error().addContext(base::strFormat("while reading %s", what)));
    };
    drm_amdgpu_info_firmware fw{};
    drm_amdgpu_info q{};
    q.query_fw.fw_type = AMDGPU_INFO_FW_GFX_MEC;
    HAL_TRY_ASSIGN(bool mec, optional(AMDGPU_INFO_FW_VERSION, &fw, sizeof fw, q,
                                      "AMDGPU_INFO_FW_VERSION (MEC)"));
    if (mec)
        info.mecFwVersion = fw.ver;
    q = {};
    fw = {};
    q.query_fw.fw_type = AMDGPU_INFO_FW_SDMA;
    HAL_TRY_ASSIGN(bool sdma, optional(AMDGPU_INFO_FW_VERSION, &fw, sizeof fw, q,
                                       "AMDGPU_INFO_FW_VERSION (SDMA)"));
    if (sdma)
        info.sdmaFwVersion = fw.ver;
    q = {};
    q.query_hw_ip.type = AMDGPU_HW_IP_DMA;
    uint32_t count = 0;
    HAL_TRY_ASSIGN(bool engines, optional(AMDGPU_INFO_HW_IP_COUNT, &count, sizeof count, q,
                                          "AMDGPU_INFO_HW_IP_COUNT (SDMA)"));
    if (engines)
        info.sdmaEngines = count;
    return info;
}

// KFD's own recipe (topology/gpu_id.h) with what a render node tells; the subsystem ids and
// the XCC mask are not read, so this is KFD's hash of other inputs, not KFD's gpu_id.
uint32_t syntheticGpuId(const PciLocation& pci, uint32_t deviceId, uint64_t vramSize) {
    topology::KfdGpuIdInputs in;
    in.devfn = pci.locationId() & 0xff;
    in.bus = pci.bus;
    in.domain = pci.domain;
    in.deviceId = deviceId;
    in.localMemSize = vramSize;
    return topology::kfdUniqueGpuId(topology::kfdGpuIdHash(in), [](uint32_t) { return false; });
}

topology::Node gpuNodeFromRenderNode(const RenderNodeSysfs& sysfs, const GpuInfo& info) {
    topology::Node node;
    const drm_amdgpu_info_device& d = info.dev;
    // KFD reports 2 SIMDs per CU from gfx10 (Navi) on, 4 before.
    uint32_t simdPerCu = d.family >= AMDGPU_FAMILY_NV ? 2 : 4;
    node.set("cpu_cores_count", 0);
    node.set("simd_count", static_cast<uint64_t>(d.cu_active_number) * simdPerCu);
    node.set("mem_banks_count", 1);
    node.set("caches_count", 0);
    node.set("io_links_count", 1);
    node.set("simd_per_cu", simdPerCu);
    node.set("simd_arrays_per_engine", d.num_shader_arrays_per_engine);
    node.set("array_count",
             static_cast<uint64_t>(d.num_shader_engines) * d.num_shader_arrays_per_engine);
    node.set("cu_per_simd_array", d.num_cu_per_sh);
    node.set("wave_front_size", d.wave_front_size);
    node.set("max_engine_clk_fcompute", d.max_engine_clock / 1000);
    node.set("vendor_id", sysfs.vendorId.value_or(0x1002));
    node.set("device_id", sysfs.deviceId.value_or(d.device_id));
    if (sysfs.pci) {
        node.set("location_id", sysfs.pci->locationId());
        node.set("domain", sysfs.pci->domain);
    }
    node.set("drm_render_minor", sysfs.minor);
    node.set("hive_id", 0);
    node.set("local_mem_size", info.vram.vram_size);
    node.set("num_sdma_engines", info.sdmaEngines);
    node.set("fw_version", info.mecFwVersion);
    node.set("sdma_fw_version", info.sdmaFwVersion);
    topology::MemBank bank;
    bank.heapType = info.vram.vram_cpu_accessible_size >= info.vram.vram_size ? 1 : 2;
    bank.sizeInBytes = info.vram.vram_size;
    bank.properties["heap_type"] = bank.heapType;
    bank.properties["size_in_bytes"] = bank.sizeInBytes;
    node.memBanks.push_back(bank);
    node.syntheticGpuId = true;
    return node;
}

bool isAmdgpuNode(const RenderNodeSysfs& sysfs, DrmCalls& calls, int fd) {
    if (!sysfs.driver.empty())
        return sysfs.driver == "amdgpu";
    if (fd < 0)
        return false;
    auto name = calls.driverName(fd);
    return name.ok() && name.value() == "amdgpu";
}

base::Result<topology::Topology> readRenderNodeTopology(KernelInterface& kernel,
                                                        const Paths& paths) {
    DrmCalls calls(kernel);
    topology::Topology topo;
    topo.source = "render nodes under " + paths.devRoot + "/dri";
    topology::Node cpu;
    cpu.index = 0;
    cpu.set("cpu_cores_count", 1);
    cpu.set("simd_count", 0);
    topo.nodes.push_back(cpu);
    std::set<uint32_t> used;
    const topology::sysfs::Dir& files = kernel.files();
    for (unsigned minor : listRenderMinors(files, paths)) {
        RenderNodeSysfs sysfs = readRenderNodeSysfs(files, paths, minor);
        std::string path = paths.renderNodePath(minor);
        int fd = kernel.open(path);
        if (fd < 0) {
            topo.skipped.push_back(base::strFormat("%s: open: %s", path.c_str(), strerror(-fd)));
            continue;
        }
        if (!isAmdgpuNode(sysfs, calls, fd)) {
            kernel.close(fd);
            topo.notes.push_back(path + " is not an amdgpu render node");
            continue;
        }
        auto info = queryGpuInfo(calls, fd);
        kernel.close(fd);
        if (!info.ok()) {
            topo.skipped.push_back(path + ": " + info.error().describe());
            continue;
        }
        topology::Node node = gpuNodeFromRenderNode(sysfs, info.value());
        node.index = static_cast<uint32_t>(topo.nodes.size());
        uint32_t id = syntheticGpuId(sysfs.pci.value_or(PciLocation{}),
                                     static_cast<uint32_t>(node.prop("device_id")),
                                     info.value().vram.vram_size);
        node.gpuId =
            topology::kfdUniqueGpuId(id, [&](uint32_t taken) { return used.count(taken) != 0; });
        used.insert(node.gpuId);
        topology::Link toCpu;
        toCpu.type = static_cast<uint32_t>(topology::LinkType::PciExpress);
        toCpu.nodeFrom = node.index;
        toCpu.nodeTo = 0;
        toCpu.weight = 20;
        toCpu.properties = {
            {"type", toCpu.type}, {"node_from", node.index}, {"node_to", 0}, {"weight", 20}};
        node.ioLinks.push_back(toCpu);
        topology::Link fromCpu = toCpu;
        fromCpu.nodeFrom = 0;
        fromCpu.nodeTo = node.index;
        fromCpu.properties["node_from"] = 0;
        fromCpu.properties["node_to"] = node.index;
        topo.nodes[0].ioLinks.push_back(fromCpu);
        topo.notes.push_back(base::strFormat("gpu_id %s of %s is synthetic (no KFD sysfs)",
                                             topology::gpuIdHex(id).c_str(), path.c_str()));
        topo.nodes.push_back(std::move(node));
    }
    topo.nodes[0].set("io_links_count", topo.nodes[0].ioLinks.size());
    if (topo.nodes.size() == 1)
        return base::makeError(ErrorCode::NotPresent, "no amdgpu render node under %s/dri%s",
                               paths.devRoot.c_str(),
                               topo.skipped.empty() ? "" : (" (" + topo.skipped[0] + ")").c_str());
    return topo;
}

base::Result<topology::Topology> readLocalTopology(KernelInterface& kernel, const Paths& paths) {
    std::string nodes = paths.kfdRoot() + "/nodes";
    int err = 0;
    // KFD's tree is there unless its nodes/ is missing (a tree that is there but cannot be read
    // is KFD's reader's error to report).
    if (kernel.files().openDir(nodes.c_str(), &err) || err != ENOENT)
        return topology::readKfdTopology(kernel.files(), paths.kfdRoot());
    return readRenderNodeTopology(kernel, paths);
}

} // namespace drm
