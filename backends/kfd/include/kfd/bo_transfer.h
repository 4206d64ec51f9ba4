#pragma once
/// \file
/// The VRAM/GTT BOs of one GPU whose contents move between the device and the checkpoint, as
/// this backend knows them (their dmabuf fds, sizes and VAs), and how such a job travels to
/// criu's main process in a parallel restore. Where their bytes go, in which files and through
/// which lane, is the HAL's recipe (hal/bo_contents.h; kfd/contents_lanes.h gives it the jobs).

#include "base/result.h"
#include "content/digest.h"
#include "coordination/parallel_restore.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfd {

/// One BO whose contents move.
struct TransferBo {
    uint32_t index = 0; ///< position in the image's bo_entries (for messages)
    uint64_t size = 0;  ///< bytes to move
    int dmabufFd = -1;  ///< the kernel's dmabuf fd of the BO
    uint32_t allocFlags = 0;
    uint64_t va = 0; ///< its GPU VA (with gpuId and size: its key in a chunk record)
    /// Restore, in a file of its own (ContentsLayout::PerBo): the checksum the dump recorded.
    std::optional<content::ContentChecksum> expected;
};

/// The contents of one GPU: its BOs in image order (possibly none).
struct GpuTransfer {
    uint32_t gpuId = 0;     ///< user gpu_id (names the pages file and messages)
    std::string renderPath; ///< render node the copies run on (the GPU holding the BOs now)
    std::vector<TransferBo> bos;
    uint32_t fileId = 0; ///< criu's file id of the KFD file (names the contents files)
    /// Restore: the checksum the dump recorded for the GPU's pages file (none in other writers'
    /// images).
    std::optional<content::ContentChecksum> expected;
    /// Restore: the dump wrote each BO to a contents file of its own, not to the GPU's pages
    /// file (kfd_images.h: ContentsLayout::PerBo).
    bool perBo = false;
};

/// Size and checksum of the bytes of one pages file (after its size header).
struct PagesDigest {
    uint32_t gpuId = 0;
    uint64_t size = 0;
    content::ContentChecksum checksum;
};

/// Adds the size of BO `index` of GPU `gpuId` to `*total`; an Image error when the sum does not
/// fit in 64 bits (sizes read from an image can be anything).
base::Result<void> addBoSize(uint64_t* total, uint64_t size, uint32_t gpuId, size_t index);

/// The sum of the sizes of `job`'s BOs (see addBoSize).
base::Result<uint64_t> transferBytes(const GpuTransfer& job);

/// Splits a total staging budget between `workers` concurrent GPU workers (page multiples of at
/// least two pages each), so the sum never exceeds the configured size by more than rounding.
/// Each worker's lane takes of its share what its BOs need (hal::laneStagingBytes).
uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers);

/// Parallel restore: `job` as a ContentJob (its BOs' dmabuf fds, borrowed) for a checkpoint of
/// `lanes` GPUs, and back (the job's fds then belong to the GpuTransfer's BOs).
coordination::ContentJob encodeTransferJob(const GpuTransfer& job, uint32_t lanes);
base::Result<GpuTransfer> decodeTransferJob(const coordination::ContentJob& job);

} // namespace kfd
