#pragma once
/// \file
/// Moving the VRAM/GTT BO contents of one GPU between the device and its pages file in a content
/// lane (datapath/content_pipeline.h): SDMA copies, the checksum and the file I/O overlap, each on
/// its own thread, through the slots of a staging buffer registered once with the GPU, so host
/// memory stays at the configured staging size whatever the VRAM size. One lane per GPU, all
/// GPUs at once.
///
/// A pages file is framed as CRIU's own plugin frames it: an 8-byte host-endian size header (the
/// sum of the GPU's VRAM/GTT BO sizes, checked at restore), then the BOs' bytes in image order.
/// Every GPU of a process has one, a GPU without such BOs a file with header 0.

#include "base/result.h"
#include "content/digest.h"
#include "content/stream.h"
#include "coordination/parallel_restore.h"
#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"
#include "kfd/kernel_interface.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
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
    /// Restore, in a file of its own (kfd/bo_files.h): the checksum the dump recorded.
    std::optional<content::ContentChecksum> expected;
};

/// The contents of one GPU: its BOs in image order (possibly none) and its pages file.
struct GpuTransfer {
    uint32_t gpuId = 0;     ///< user gpu_id (names the pages file and messages)
    std::string renderPath; ///< render node the copies run on (the GPU holding the BOs now)
    std::vector<TransferBo> bos;
    std::string imageName; ///< the pages file
    /// Restore: the checksum the dump recorded for the pages file (none in other writers' images).
    std::optional<content::ContentChecksum> expected;
    /// Dump: zero blocks are left out of the pages file as holes (option `content-holes`).
    bool holes = true;
    /// Each BO in a contents file of its own (kfd/bo_files.h) instead of `imageName`, named
    /// after criu's file id `fileId`.
    bool perBo = false;
    uint32_t fileId = 0;
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

/// Opens the pages file `name` of GPU `gpuId` and checks its size header against `total`, the
/// sum of the sizes of its `boCount` VRAM/GTT BOs (CRIU's "size mismatch" check), and, when the
/// store knows it, the file's size.
base::Result<formats::FramedImage> openPagesFile(formats::ImageStore& store,
                                                 const std::string& name, uint32_t gpuId,
                                                 size_t boCount, uint64_t total);

/// Splits a total staging budget between `workers` concurrent GPU workers (page multiples of at
/// least two pages each), so the sum never exceeds the configured size by more than rounding.
uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers);

/// The staging one worker of `job` registers with the GPU: its share `each`, but no more than the
/// job's bytes rounded up to whole incremental chunks per lane slot (8 MiB with four slots of
/// 2 MiB chunks). The buffer is registered whole (a userptr BO, which the kernel pins and the
/// user-space driver copies into shared memory), so a job smaller than its share does not pay
/// for the rest of it.
uint64_t stagingForJob(uint64_t each, const GpuTransfer& job);

/// The smallest slot pagesStagingForJob gives a lane.
inline constexpr uint64_t kMinPagesSlot = 256ull << 10;

/// The staging a dump of `job` into CRIU's pages file registers: stagingForJob's, but slots no
/// larger than a quarter of the job's largest BO (kMinPagesSlot at least, in whole pages). A
/// pages file records no chunks, so its slots need not be whole ones; each slot in flight holds
/// at most one BO's piece, so with slots as large as the BOs a job of small BOs keeps
/// kLaneSlots whole BOs resident in criu at once (4 MiB with 1 MiB BOs; 1 MiB with these).
uint64_t pagesStagingForJob(uint64_t each, const GpuTransfer& job);

/// Copies every BO of `job` into its pages file (header first); returns what was written.
base::Result<PagesDigest> dumpGpuContents(KernelInterface& kernel, formats::ImageStore& store,
                                          const GpuTransfer& job, uint64_t stagingBytes);

/// Writes every BO of `job` back from its pages file through `staging` after checking its
/// header; the file must end after the last BO and match the recorded checksum.
base::Result<void> restoreGpuContents(KernelInterface& kernel, formats::ImageStore& store,
                                      const GpuTransfer& job, std::span<std::byte> staging);

/// Parallel restore: `job` as a ContentJob (its BOs' dmabuf fds, borrowed) for a checkpoint of
/// `lanes` GPUs, and back (the job's fds then belong to the GpuTransfer's BOs).
coordination::ContentJob encodeTransferJob(const GpuTransfer& job, uint32_t lanes);
base::Result<GpuTransfer> decodeTransferJob(const coordination::ContentJob& job);

/// Runs the jobs concurrently, one thread each, and waits for all; the first error (in job
/// order) is returned, the others are logged.
base::Result<std::vector<PagesDigest>>
runPerGpu(std::vector<std::function<base::Result<PagesDigest>()>> jobs);

} // namespace kfd
