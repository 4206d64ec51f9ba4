#pragma once
/// \file
/// Moving the VRAM/GTT BO contents of one GPU between the device and its pages file through a
/// two-half staging buffer: while the SDMA engine fills (or drains) one half, the other half is
/// written to (or read from) the image, so GPU copies overlap file I/O and host memory stays at
/// the configured staging size whatever the VRAM size. One worker thread per GPU.

#include "hal/content_stream.h"
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

/// The contents of one GPU: its BOs in image order and its pages file.
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

/// Splits a total staging budget between `workers` concurrent GPU workers (page multiples of at
/// least two pages each), so the sum never exceeds the configured size by more than rounding.
uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers);

/// Copies every BO of `job` into its pages file; returns what was written.
hal::Result<PagesDigest> dumpGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                         const GpuTransfer& job, uint64_t stagingBytes);

/// Writes every BO of `job` back from its pages file; returns the digest of what was read.
hal::Result<PagesDigest> restoreGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                            const GpuTransfer& job, uint64_t stagingBytes);

/// Runs the jobs concurrently, one thread each, and waits for all; the first error (in job
/// order) is returned, the others are logged.
hal::Result<std::vector<PagesDigest>> runPerGpu(
    std::vector<std::function<hal::Result<PagesDigest>()>> jobs);

} // namespace kfd
