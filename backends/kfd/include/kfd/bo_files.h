#pragma once
/// \file
/// KFD contents in the PerBo layout (kfd_images.h: ContentsLayout): one contents file per
/// VRAM/GTT BO instead of CRIU's pages file per GPU, for compressed (`content-compression`) and
/// incremental (`parent-images`, criu's `parent` link) checkpoints. The files are written and read
/// through the formats and lanes every backend shares: formats/packed_image.h compresses frame by
/// frame, datapath/image_increment.h names the files, records each BO's chunks (key: the user
/// gpu_id, the VA and the size) and assembles a BO from its chain, datapath/content_pipeline.h
/// moves the bytes. The lanes are those of the pages files (one per GPU, all GPUs at once, SDMA
/// copies, I/O and (de)compression overlapped on their own threads), so a restore decompresses
/// the GPUs' BOs in parallel.

#include "base/result.h"
#include "datapath/image_increment.h"
#include "formats/chunk_codec.h"
#include "formats/image_store.h"
#include "kfd/bo_transfer.h"
#include "kfd/kernel_interface.h"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace kfd {

/// Dumps the BOs of `jobs` (one per GPU; `perBo` and `fileId` set) each into a file of its own,
/// named with `increment.contentsName` and compressed with `codec`, one lane per GPU with
/// `stagingBytes` of staging each, and writes the chunk record of criu file `fileId` (a checkpoint
/// of any layout PerBo can be the parent of the next). Returns each BO's checksum by its index.
hal::Result<std::map<uint32_t, hal::ContentChecksum>>
dumpBoFiles(KernelInterface& kernel, hal::ImageStore& store, const std::vector<GpuTransfer>& jobs,
            uint64_t stagingBytes, const hal::IncrementalDump& increment,
            const hal::CodecSpec& codec);

/// Before any GPU is touched, when the store can be read twice: every BO of `job` has its file
/// (in this checkpoint or, through `chain`, in its parents), of the BO's size.
hal::Result<void> checkBoFiles(hal::ImageStore& store, const hal::RestoreChain* chain,
                               const GpuTransfer& job);

/// Writes every BO of `job` back from its file (assembled from `chain` when it has one) through
/// `staging`, checking each against the checksum the dump recorded.
hal::Result<void> restoreBoFiles(KernelInterface& kernel, hal::ImageStore& store,
                                 const hal::RestoreChain* chain, const GpuTransfer& job,
                                 std::span<std::byte> staging);

} // namespace kfd
