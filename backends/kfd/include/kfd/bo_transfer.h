#pragma once
/// \file
/// Moving the VRAM/GTT BO contents of one GPU between the device and its pages file through a
/// two-half staging buffer: while the SDMA engine fills (or drains) one half, the other half is
/// written to (or read from) the image, so GPU copies overlap file I/O and host memory stays at
/// the configured staging size whatever the VRAM size. One worker thread per GPU.
///
/// A pages file is framed as CRIU's own plugin frames it: an 8-byte host-endian size header (the
/// sum of the GPU's VRAM/GTT BO sizes, checked at restore), then the BOs' bytes in image order.
/// Every GPU of a process has one, a GPU without such BOs a file with header 0.

#include "hal/content_stream.h"
#include "hal/framed_image.h"
#include "hal/image_store.h"
#include "hal/result.h"
#include "kfd/kernel_interface.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kfd {

/// One BO whose contents move.
struct TransferBo {
    uint32_t index = 0;     ///< position in the image's bo_entries (for messages)
    uint64_t size = 0;      ///< bytes to move
    int dmabufFd = -1;      ///< the kernel's dmabuf fd of the BO
    uint32_t allocFlags = 0;
};

/// The contents of one GPU: its BOs in image order (possibly none) and its pages file.
struct GpuTransfer {
    uint32_t gpuId = 0;     ///< user gpu_id (names the pages file and messages)
    std::string renderPath; ///< render node the copies run on (the GPU holding the BOs now)
    std::vector<TransferBo> bos;
    std::string imageName;  ///< the pages file
};

/// Size and FNV-1a 64 of the bytes of one pages file.
struct PagesDigest {
    uint32_t gpuId = 0;
    uint64_t size = 0;
    uint64_t fnv1a64 = 0;
};

/// Adds the size of BO `index` of GPU `gpuId` to `*total`; an Image error when the sum does not
/// fit in 64 bits (sizes read from an image can be anything).
hal::Result<void> addBoSize(uint64_t* total, uint64_t size, uint32_t gpuId, size_t index);

/// The sum of the sizes of `job`'s BOs (see addBoSize).
hal::Result<uint64_t> transferBytes(const GpuTransfer& job);

/// Opens the pages file `name` of GPU `gpuId` and checks its size header against `total`, the
/// sum of the sizes of its `boCount` VRAM/GTT BOs (CRIU's "size mismatch" check), and, when the
/// store knows it, the file's size.
hal::Result<hal::FramedImage> openPagesFile(hal::ImageStore& store, const std::string& name,
                                            uint32_t gpuId, size_t boCount, uint64_t total);

/// Splits a total staging budget between `workers` concurrent GPU workers (page multiples of at
/// least two pages each), so the sum never exceeds the configured size by more than rounding.
uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers);

/// Copies every BO of `job` into its pages file (header first); returns what was written.
hal::Result<PagesDigest> dumpGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                         const GpuTransfer& job, uint64_t stagingBytes);

/// Writes every BO of `job` back from its pages file after checking its header; the file must
/// end after the last BO. Returns the digest of what was read.
hal::Result<PagesDigest> restoreGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                            const GpuTransfer& job, uint64_t stagingBytes);

/// Runs the jobs concurrently, one thread each, and waits for all; the first error (in job
/// order) is returned, the others are logged.
hal::Result<std::vector<PagesDigest>> runPerGpu(
    std::vector<std::function<hal::Result<PagesDigest>()>> jobs);

} // namespace kfd
