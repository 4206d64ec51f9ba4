#include "kfd/contents_lanes.h"

#include "sdma_lane.h"

#include <algorithm>

namespace kfd {
namespace {

/// BO `bo` of `job` as the HAL names, keys and moves it (no device end: the lane's).
hal::BoContents contentsOf(const GpuTransfer& job, const TransferBo& bo) {
    return {{hal::BoFileFamily::KfdBo, job.fileId, job.gpuId, bo.index},
            hal::BoKey{job.gpuId, bo.va, bo.size},
            bo.size,
            boWhat(bo),
            nullptr,
            nullptr,
            bo.expected};
}

/// The lane of `job`'s BOs, in the GPU's pages file when `pagesFile`, without its device end.
hal::ContentsLane laneOf(const GpuTransfer& job, bool pagesFile) {
    hal::ContentsLane lane;
    lane.gpu = "GPU " + topology::gpuIdHex(job.gpuId);
    lane.bos.reserve(job.bos.size());
    for (const TransferBo& bo : job.bos)
        lane.bos.push_back(contentsOf(job, bo));
    if (pagesFile)
        lane.pagesFile = hal::GpuPagesFile{job.fileId, job.gpuId};
    lane.checksum = job.expected;
    return lane;
}

/// The lane of `job`'s BOs through the GPU's SDMA engine.
hal::ContentsLane sdmaLaneOf(KernelInterface& kernel, const GpuTransfer& job, bool pagesFile) {
    hal::ContentsLane lane = laneOf(job, pagesFile);
    lane.open = [&kernel, &job](std::span<std::byte> staging) {
        return SdmaLaneDevice::open(kernel, job, staging);
    };
    return lane;
}

} // namespace

hal::ContentsLane dumpLaneOf(KernelInterface& kernel, const GpuTransfer& job, uint64_t share) {
    // CRIU's layout keeps a GPU's BOs in its pages file; the HAL decides whether this dump is in
    // CRIU's layout.
    hal::ContentsLane lane = sdmaLaneOf(kernel, job, true);
    lane.stagingBytes = share;
    return lane;
}

base::Result<std::vector<GpuTransfer>> restoreJobsOf(hal::ImageStore& store, uint32_t id,
                                                     const KfdImage& image,
                                                     const hal::RestoreChain* chain) {
    bool perBo = image.layout == ContentsLayout::PerBo;
    if (!perBo)
        HAL_TRY(checkPagesChecksums(id, image));
    HAL_TRY_ASSIGN(std::vector<GpuPages> gpus, pagesOfGpus(image));
    std::vector<GpuTransfer> jobs;
    for (const GpuPages& gpu : gpus) {
        GpuTransfer job;
        job.gpuId = gpu.gpuId;
        job.perBo = perBo;
        job.fileId = id;
        for (const PagesDigest& d : image.checksums)
            if (d.gpuId == gpu.gpuId)
                job.expected = d.checksum;
        for (size_t i : gpu.bos) {
            const BoRecord& bo = image.bos[i];
            if (bo.size > 0)
                job.bos.push_back(
                    {static_cast<uint32_t>(i), bo.size, -1, bo.allocFlags, bo.addr, bo.checksum});
        }
        HAL_TRY_CONTEXT(hal::checkContentsFiles(store, chain, laneOf(job, !perBo)),
                        "while checking the contents of %s", formats::kfdImageName(id).c_str());
        jobs.push_back(std::move(job));
    }
    return jobs;
}

base::Result<void> restoreContents(KernelInterface& kernel, hal::ImageStore& store,
                                   const hal::RestoreChain* chain, const GpuTransfer& job,
                                   std::span<std::byte> staging, uint64_t share) {
    hal::ContentsLane lane = sdmaLaneOf(kernel, job, !job.perBo);
    if (!staging.empty()) {
        // criu's main process holds one area for the jobs handed to it (a parallel restore), and
        // the lane opens its engine over what it takes: what its BOs need, as a lane of its own
        // would take of its share.
        uint64_t fitted = hal::laneStagingBytesOf(staging.size(), lane, !job.perBo);
        lane.staging = staging.first(std::min<uint64_t>(fitted, staging.size()));
    }
    lane.stagingBytes = share;
    return hal::restoreBoContents(store, chain, lane);
}

} // namespace kfd
