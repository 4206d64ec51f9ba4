#pragma once
/// \file
/// The BO contents of a KFD file as this backend hands them to the HAL's recipe
/// (hal/bo_contents.h): a lane per GPU, each BO with its size, identity and the GPU's SDMA
/// engine as its device end. The HAL names the files and chooses their layout: CRIU's (one pages
/// file per GPU, `amdgpu-pages-<id>-<gpu_id>.img`, which CRIU's own plugin restores) for a full,
/// uncompressed, plain dump, or ours (kfd_images.h: ContentsLayout::PerBo, one file per BO) for
/// compressed (`content-compression`), incremental (`parent-images`, criu's `parent` link) or
/// encrypted ones. One lane per GPU, all GPUs at once, SDMA copies, I/O and (de)compression
/// overlapped on their own threads.

#include "base/result.h"
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_images.h"

#include <cstdint>
#include <span>
#include <vector>

namespace kfd {

/// The lane that saves the BOs of GPU `job` at dump (hal::Device::saveBoContents) through the
/// GPU's SDMA engine, in its pages file or a file per BO as the HAL chooses, over what the lane
/// needs of `share` bytes of staging. `kernel` and `job` must outlive it.
hal::ContentsLane dumpLaneOf(KernelInterface& kernel, const GpuTransfer& job, uint64_t share);

/// The contents of KFD image `id`, one job per GPU of its device entries (no dmabuf fds or
/// render nodes yet), checked before any GPU is touched: the checksums the image records, and,
/// when the store can be read twice, the contents files (each GPU's pages file, or in the PerBo
/// layout each BO's file, in this checkpoint or through `chain` in its parents) hold the sizes of
/// their BOs.
base::Result<std::vector<GpuTransfer>> restoreJobsOf(hal::ImageStore& store, uint32_t id,
                                                     const KfdImage& image,
                                                     const hal::RestoreChain* chain);

/// Writes every BO of `job` back from its files (assembled from `chain` when it has one) through
/// `staging`, or with none, through what the lane needs of `share` bytes, checking each file
/// against the checksum the dump recorded.
base::Result<void> restoreContents(KernelInterface& kernel, hal::ImageStore& store,
                                   const hal::RestoreChain* chain, const GpuTransfer& job,
                                   std::span<std::byte> staging, uint64_t share = 0);

} // namespace kfd
