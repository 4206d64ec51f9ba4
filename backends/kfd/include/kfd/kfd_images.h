#pragma once
/// \file
/// The images of the KFD backend, with exactly CRIU's names and messages: `amdgpu-kfd-<id>.img`
/// (criu_kfd), `amdgpu-renderD-<id>.img` (criu_render_node) and the raw pages files
/// `amdgpu-pages-<id>-<gpu_id %04x>.img`. Writing sets every field CRIU declares required;
/// reading accepts images lacking fields that newer writers added, and rejects images whose
/// parts disagree with an Error naming the file.

#include "hal/image_store.h"
#include "hal/result.h"
#include "hal/topology.h"
#include "kfd/bo_transfer.h"
#include "kfd/kfd_uapi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kfd {

/// `amdgpu-kfd-<id>.img`.
std::string kfdImageName(uint32_t id);
/// `amdgpu-renderD-<id>.img`.
std::string renderImageName(uint32_t id);
/// `amdgpu-pages-<id>-<gpu_id as %04x>.img`.
std::string pagesImageName(uint32_t id, uint32_t gpuId);

/// One BO as the image records it.
struct BoRecord {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t offset = 0;  ///< mmap offset at checkpoint
    uint32_t gpuId = 0;   ///< user gpu_id
    uint32_t allocFlags = 0;
};

/// The contents of a criu_kfd image.
struct KfdImage {
    uint32_t pid = 0;
    hal::Topology topology; ///< the device entries (GPUs by user gpu_id, and CPUs)
    std::vector<BoRecord> bos;
    uint32_t numObjects = 0;
    uint64_t sharedMemSize = 0;
    uint32_t sharedMemMagic = 0;
    std::vector<uint8_t> privData;
    std::vector<PagesDigest> checksums; ///< empty in images of other writers
};

/// Writes a criu_kfd image.
hal::Result<void> writeKfdImage(hal::ImageStore& store, const std::string& name,
                                const KfdImage& image);
/// Reads and checks a criu_kfd image (counts agree, every BO's GPU is listed, priv data present).
hal::Result<KfdImage> readKfdImage(hal::ImageStore& store, const std::string& name);

/// The contents of a criu_render_node image.
struct RenderImage {
    uint32_t gpuId = 0; ///< user gpu_id of the GPU whose render node the fd was
};

/// Writes a criu_render_node image (no render-node BOs: those belong to the amdgpu-drm backend).
hal::Result<void> writeRenderImage(hal::ImageStore& store, const std::string& name, uint32_t id,
                                   uint32_t gpuId, uint32_t renderMinor);
/// Reads a criu_render_node image (v4.2 images carry only gpu_id).
hal::Result<RenderImage> readRenderImage(hal::ImageStore& store, const std::string& name);

/// The BOs of each GPU whose contents travel in pages files, in image order; GPUs in device
/// entry order, GPUs without such BOs left out.
std::vector<std::pair<uint32_t, std::vector<size_t>>> contentBosByGpu(const KfdImage& image);

/// Checks every pages file of image `id` before anything is restored: it exists, its size is
/// the sum of its BOs' sizes, and (when the image carries checksums and the store can be read
/// twice) its FNV-1a 64 matches.
hal::Result<void> checkPagesFiles(hal::ImageStore& store, uint32_t id, const KfdImage& image);

} // namespace kfd
