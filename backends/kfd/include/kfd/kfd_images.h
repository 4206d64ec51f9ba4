#pragma once
/// \file
/// The images of the KFD backend, with exactly CRIU's names, messages and framing:
/// `amdgpu-kfd-<id>.img` (criu_kfd), `amdgpu-renderD-<id>.img` (criu_render_node, no BOs) and
/// the checksums of the BO contents files the HAL writes beside them (hal/bo_contents.h: one
/// pages file `amdgpu-pages-<id>-<gpu_id %04x>.img` per GPU, or a file per BO). Writing sets every
/// field CRIU declares required; reading accepts images lacking fields that newer writers added,
/// and rejects images whose parts disagree with an Error naming the file.

#include "base/result.h"
#include "formats/image_names.h"
#include "formats/image_store.h"
#include "formats/render_node_image.h"
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"
#include "kfd/kfd_uapi.h"
#include "topology/topology.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfd {

/// One BO as the image records it.
struct BoRecord {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t offset = 0; ///< mmap offset at checkpoint
    uint32_t gpuId = 0;  ///< user gpu_id
    uint32_t allocFlags = 0;
    /// The checksum of its contents file (ContentsLayout::PerBo images only).
    std::optional<content::ContentChecksum> checksum;
};

/// Where a KFD checkpoint keeps its BO contents (criu_kfd.contents_layout).
enum class ContentsLayout : uint32_t {
    /// CRIU's: one pages file per GPU, its BOs one after the other (hal::GpuPagesFile). Every
    /// full, uncompressed, plain dump, so CRIU's own plugin restores it.
    PagesPerGpu = 0,
    /// Ours: one contents file per VRAM/GTT BO (kfdBoImageName, then packed, encrypted or a
    /// delta: hal/bo_contents.h), no pages files. Compressed, encrypted and incremental dumps.
    PerBo = 1,
};

/// The contents of a criu_kfd image.
struct KfdImage {
    uint32_t pid = 0;
    topology::Topology topology; ///< the device entries (GPUs by user gpu_id, and CPUs)
    std::vector<BoRecord> bos;
    uint32_t numObjects = 0;
    uint64_t sharedMemSize = 0;
    uint32_t sharedMemMagic = 0;
    std::vector<uint8_t> privData;
    std::vector<PagesDigest> checksums; ///< empty in images of other writers
    ContentsLayout layout = ContentsLayout::PagesPerGpu;
};

/// The name a full, uncompressed dump would give the contents file of BO `boIndex` (of GPU
/// `gpuId`) of KFD image `id` in the PerBo layout (formats/image_names.h); the files a dump
/// writes take their packed or delta form of it, never this one.
using formats::kfdBoImageName;

/// What identifies BO `bo` across checkpoints (its key in a chunk record): its GPU, VA and size.
hal::BoKey boKeyOf(const BoRecord& bo);

/// Writes a criu_kfd image.
base::Result<void> writeKfdImage(formats::ImageStore& store, const std::string& name,
                                 const KfdImage& image);
/// Reads and checks a criu_kfd image (counts agree, every BO's GPU is listed, priv data present).
base::Result<KfdImage> readKfdImage(formats::ImageStore& store, const std::string& name);

/// Reads the render-node image of criu file id `id` for a restore by this backend, which
/// reopens the render node of the mapped GPU and nothing else: an image that lists BOs (written
/// by the amdgpu-drm backend, or by CRIU's development-branch plugin) is an Image error saying
/// why and what restores it, never a render fd with its buffers dropped.
base::Result<formats::RenderNodeImage> readRenderImageWithoutBos(formats::ImageStore& store,
                                                                 uint32_t id);

/// The VRAM/GTT BOs of one GPU, whose contents travel in its pages file.
struct GpuPages {
    uint32_t gpuId = 0;
    std::vector<size_t> bos; ///< indices into KfdImage::bos, in image order
    uint64_t bytes = 0;      ///< the sum of their sizes: the pages file's size header
};

/// One entry per GPU of the image's device entries, in their order, GPUs without VRAM/GTT BOs
/// included (CRIU writes, and opens at restore, a pages file for each). An Image error when the
/// sizes of a GPU's BOs add up to more than 64 bits.
base::Result<std::vector<GpuPages>> pagesOfGpus(const KfdImage& image);

/// Checks, before anything is restored, that the checksum image `id` records for each GPU's
/// pages file covers as many bytes as its BOs hold (the HAL checks the files themselves:
/// hal::checkContentsFiles; their contents are verified against the checksum as they are copied).
base::Result<void> checkPagesChecksums(uint32_t id, const KfdImage& image);

} // namespace kfd
