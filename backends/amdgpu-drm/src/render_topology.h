#pragma once
/// \file
/// The machine's topology without KFD: one node per amdgpu render node, built from sysfs
/// (vendor, device, PCI location) and AMDGPU_INFO queries, under the same sysfs keys KFD's tree
/// uses where they can be derived, with a stable synthetic gpu_id. With KFD sysfs present, KFD's
/// own tree is used instead.

#include "amdgpu-drm/kernel_interface.h"
#include "amdgpu-drm/paths.h"
#include "drm_calls.h"
#include "render_nodes.h"

#include "base/result.h"
#include "topology/topology.h"

#include <cstdint>
#include <string>

namespace drm {

/// What the AMDGPU_INFO queries tell about one GPU.
struct GpuInfo {
    drm_amdgpu_info_device dev{};
    drm_amdgpu_info_vram_gtt vram{};
    uint32_t mecFwVersion = 0;
    uint32_t sdmaFwVersion = 0;
    uint32_t sdmaEngines = 0;
};

/// Runs the INFO queries on an open render-node fd.
base::Result<GpuInfo> queryGpuInfo(DrmCalls& calls, int fd);

/// The synthetic gpu_id of a GPU: a CRC-16 over PCI location, device id and VRAM size, as KFD
/// derives its own (never 0).
uint32_t syntheticGpuId(const PciLocation& pci, uint32_t deviceId, uint64_t vramSize);

/// Builds the GPU node of one render node (index and gpu_id left to the caller).
topology::Node gpuNodeFromRenderNode(const RenderNodeSysfs& sysfs, const GpuInfo& info);

/// The topology from the amdgpu render nodes under paths.devRoot: a CPU node 0, then one GPU
/// node per render node in minor order. Non-amdgpu render nodes are skipped (and noted).
base::Result<topology::Topology> readRenderNodeTopology(KernelInterface& kernel,
                                                        const Paths& paths);

/// KFD's sysfs tree when it exists, else readRenderNodeTopology.
base::Result<topology::Topology> readLocalTopology(KernelInterface& kernel, const Paths& paths);

/// True when the render node is driven by amdgpu: sysfs driver link, else DRM_IOCTL_VERSION on
/// `fd` (when fd >= 0).
bool isAmdgpuNode(const RenderNodeSysfs& sysfs, DrmCalls& calls, int fd);

} // namespace drm
