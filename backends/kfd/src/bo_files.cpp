#include "kfd/bo_files.h"

#include "sdma_lane.h"

#include <algorithm>
#include <memory>

namespace kfd {
namespace {

/// BO `bo` of `job` as the HAL names, keys and moves it (no device end: the lane's).
hal::BoContents contentsOf(const GpuTransfer& job, const TransferBo& bo) {
    return {{hal::BoFileFamily::KfdBo, job.fileId, job.gpuId, bo.index},
            formats::BoKey{job.gpuId, bo.va, bo.size},
            bo.size,
            boWhat(bo),
            nullptr,
            nullptr,
            bo.expected};
}

/// The lane of `job`'s BOs through the GPU's SDMA engine.
hal::ContentsLane laneOf(KernelInterface& kernel, const GpuTransfer& job) {
    hal::ContentsLane lane;
    lane.gpu = "GPU " + topology::gpuIdHex(job.gpuId);
    for (const TransferBo& bo : job.bos)
        lane.bos.push_back(contentsOf(job, bo));
    lane.open = [&kernel, &job](std::span<std::byte> staging) {
        return SdmaLaneDevice::open(kernel, job, staging);
    };
    return lane;
}

} // namespace

hal::ContentsLane dumpLaneOf(KernelInterface& kernel, const GpuTransfer& job,
                             uint64_t stagingBytes) {
    hal::ContentsLane lane = laneOf(kernel, job);
    lane.stagingBytes = std::max<uint64_t>(stagingBytes, datapath::kLaneSlots * kPage);
    return lane;
}

base::Result<void> checkBoFiles(formats::ImageStore& store, const datapath::RestoreChain* chain,
                                const GpuTransfer& job) {
    for (const TransferBo& bo : job.bos) {
        HAL_TRY_ASSIGN(datapath::RestoreImage image,
                       hal::restoreImageOf(store, chain, contentsOf(job, bo)));
        if (store.rereadable()) // a stream can be read once: the copy checks it on the way
            HAL_TRY_CONTEXT(image.open(), "the contents of %s of GPU %s", boWhat(bo).c_str(),
                            topology::gpuIdHex(job.gpuId).c_str());
    }
    return base::success();
}

base::Result<void> restoreBoFiles(KernelInterface& kernel, formats::ImageStore& store,
                                  const datapath::RestoreChain* chain, const GpuTransfer& job,
                                  std::span<std::byte> staging) {
    hal::ContentsLane lane = laneOf(kernel, job);
    lane.staging = staging;
    return hal::restoreBoContents(store, chain, lane);
}

} // namespace kfd
