#pragma once
/// \file
/// The render-node image (`amdgpu-renderD-<id>.img`, message `criu_render_node`) as C++ values,
/// and the names of the per-BO contents files. Shared by the render-node and mock backends.

#include "base/result.h"
#include "content/digest.h"
#include "formats/image_names.h"
#include "formats/image_store.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace formats {

using base::Result;
using content::ContentChecksum;

/// One GPU virtual-address mapping of a BO.
struct DrmVmEntry {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
    uint64_t flags = 0;
};

/// Which BOs of a render-node image are the same memory (project addition; see
/// drm_bo_entry.share_key).
struct BoSharing {
    uint64_t key = 0;      ///< 0 = cannot be shared
    bool follower = false; ///< restored by import from the owner of `key`
    /// A follower's owner: criu's file id of the render-node image holding it (0: not recorded).
    uint32_t ownerFile = 0;
};

/// One buffer object of a render-node file.
struct DrmBoEntry {
    uint64_t addr = 0; ///< CPU mmap offset owner address, as the reference plugin records it
    uint64_t size = 0;
    uint64_t offset = 0; ///< mmap offset (GEM_MMAP) at dump
    uint64_t allocFlags = 0;
    uint64_t alignment = 0;
    uint32_t preferredDomains = 0;
    uint32_t handle = 0;
    bool isImport = false;
    std::vector<DrmVmEntry> vms;
    /// Project addition: the checksum of the contents file (XXH3-64 now, FNV-1a 64 in images of
    /// earlier versions).
    std::optional<ContentChecksum> checksum;
    /// Project addition: absent in images of CRIU's plugin, which key shared BOs by GEM handle.
    std::optional<BoSharing> sharing;
};

/// A GPU context of a render-node file (project addition).
struct DrmCtxEntry {
    uint32_t id = 0;
    uint64_t query2Flags = 0; ///< what AMDGPU_CTX_OP_QUERY_STATE2 reported at dump
};

/// A syncobj of a render-node file (project addition).
struct DrmSyncobjEntry {
    uint32_t handle = 0;
    bool signaled = false;                 ///< holds a signaled fence (not a timeline)
    std::optional<uint64_t> timelinePoint; ///< a timeline: its signaled value
};

/// A render-node file's state.
struct RenderNodeImage {
    uint32_t gpuId = 0;
    uint32_t id = 0;
    uint32_t renderMinor = 0;
    std::vector<DrmBoEntry> bos;
    std::vector<DrmCtxEntry> contexts;     ///< project addition; none in older images
    std::vector<DrmSyncobjEntry> syncobjs; ///< project addition; none in older images
    std::string privData;                  ///< project addition: backend state kept beside the BOs
    /// True when the image came from a v4.2-or-older writer (gpu_id only, no BO list).
    bool legacyGpuIdOnly = false;
};

/// Writes the image for criu file id `image.id`.
Result<void> writeRenderNodeImage(ImageStore& store, const RenderNodeImage& image);
/// Reads the image of criu file id `id`; checks num_of_bos and num_of_vms against the lists, and
/// that every context has its id and every syncobj its handle.
Result<RenderNodeImage> readRenderNodeImage(ImageStore& store, uint32_t id);
/// An Image error naming both images when a follower of `image` names an owner image (another
/// process's) that is not in `store`: its restore would wait for an owner that never comes.
Result<void> checkShareOwnersPresent(ImageStore& store, const RenderNodeImage& image);

} // namespace formats
