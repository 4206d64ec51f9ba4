#pragma once
/// \file
/// KFD contents in the PerBo layout (kfd_images.h: ContentsLayout): one contents file per
/// VRAM/GTT BO instead of CRIU's pages file per GPU, for compressed (`content-compression`) and
/// incremental (`parent-images`, criu's `parent` link) or encrypted checkpoints. The recipe of
/// those files (names, compression, encryption, chunk records, lanes, checksums) is the HAL's
/// (hal/bo_contents.h); this backend gives it each BO's size, identity and the GPU's SDMA engine.
/// The lanes are those of the pages files (one per GPU, all GPUs at once, SDMA copies, I/O and
/// (de)compression overlapped on their own threads), so a restore decompresses the GPUs' BOs in
/// parallel.

#include "base/result.h"
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"
#include "kfd/kernel_interface.h"

#include <cstdint>
#include <span>
#include <vector>

namespace datapath {
class RestoreChain;
}

namespace kfd {

/// The lane that saves the BOs of GPU `job` (`perBo` and `fileId` set) at dump, each into a file
/// of its own (hal::Device::saveBoContents), through the GPU's SDMA engine over `stagingBytes`
/// of staging. `kernel` and `job` must outlive it.
hal::ContentsLane dumpLaneOf(KernelInterface& kernel, const GpuTransfer& job,
                             uint64_t stagingBytes);

/// Before any GPU is touched, when the store can be read twice: every BO of `job` has its file
/// (in this checkpoint or, through `chain`, in its parents), of the BO's size.
base::Result<void> checkBoFiles(formats::ImageStore& store, const datapath::RestoreChain* chain,
                                const GpuTransfer& job);

/// Writes every BO of `job` back from its file (assembled from `chain` when it has one) through
/// `staging`, checking each against the checksum the dump recorded.
base::Result<void> restoreBoFiles(KernelInterface& kernel, formats::ImageStore& store,
                                  const datapath::RestoreChain* chain, const GpuTransfer& job,
                                  std::span<std::byte> staging);

} // namespace kfd
