#include "kfd/bo_files.h"

#include "sdma_lane.h"

#include "content/stream.h"
#include "formats/framed_image.h"
#include "formats/packed_image.h"
#include "kfd/kfd_images.h"

#include <memory>

namespace kfd {
namespace {

hal::BoKey keyOf(const GpuTransfer& job, const TransferBo& bo) {
    return hal::BoKey{job.gpuId, bo.va, bo.size};
}

/// The image BO `bo` of `job` is restored from: named as this checkpoint (or its chain) holds it,
/// opened through the packed reader when packed, its size checked; no pieces yet.
hal::Result<hal::RestoreImage> restoreImageOf(hal::ImageStore& store,
                                              const hal::RestoreChain* chain,
                                              const GpuTransfer& job, const TransferBo& bo) {
    hal::RestoreImage image;
    image.name = kfdBoImageName(job.fileId, job.gpuId, bo.index);
    HAL_TRY(hal::nameRestoreImage(store, chain, image, keyOf(job, bo)));
    image.open = [&store, name = image.name, size = bo.size]() -> hal::Result<hal::FramedImage> {
        HAL_TRY_ASSIGN(hal::FramedImage opened, hal::openContentsImage(store, name));
        HAL_TRY(hal::checkContentsSize(opened, size, "the BO holds"));
        return opened;
    };
    image.expected = bo.expected;
    return image;
}

/// The lane of one GPU at dump: its images, whose pieces get their SDMA source here.
hal::Result<PagesDigest> dumpLane(KernelInterface& kernel, const GpuTransfer& job,
                                  std::vector<hal::DumpImage>& images, uint64_t stagingBytes) {
    if (images.empty())
        return PagesDigest{job.gpuId, 0, {}};
    hal::StagingBuffer staging(stagingBytes);
    HAL_TRY_ASSIGN(std::unique_ptr<sdma::Engine> engine, openEngine(kernel, job, staging.span()));
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    for (size_t k = 0; k < images.size(); ++k) {
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, job.bos[k]));
        images[k].pieces.front().source = pieces.back().get();
    }
    HAL_TRY_ASSIGN(hal::LaneReport report, hal::runDumpLane(images, laneFor(job, staging.span())));
    pieces.clear(); // before the engine goes
    return PagesDigest{job.gpuId, report.bytes, {}};
}

} // namespace

hal::Result<std::map<uint32_t, hal::ContentChecksum>>
dumpBoFiles(KernelInterface& kernel, hal::ImageStore& store, const std::vector<GpuTransfer>& jobs,
            uint64_t stagingBytes, const hal::IncrementalDump& increment,
            const hal::CodecSpec& codec) {
    // Every BO of every GPU in one list first: the chunk record covers the whole KFD file and
    // compares it against one record of the parent.
    std::vector<hal::DumpImage> all;
    std::vector<hal::BoKey> keys;
    uint32_t fileId = jobs.empty() ? 0 : jobs.front().fileId;
    for (const GpuTransfer& job : jobs)
        for (const TransferBo& bo : job.bos) {
            hal::DumpImage image;
            image.name =
                increment.contentsName(kfdBoImageName(job.fileId, job.gpuId, bo.index), codec);
            image.create = [&store, name = image.name, size = bo.size, codec] {
                return hal::createContentsImage(store, name, size, codec);
            };
            image.pieces.push_back({nullptr, nullptr, bo.size, boWhat(bo)});
            all.push_back(std::move(image));
            keys.push_back(keyOf(job, bo));
        }
    uint64_t staging = std::max<uint64_t>(stagingBytes, hal::kLaneSlots * kPage);
    HAL_TRY_ASSIGN(hal::FileIncrement chunks,
                   hal::FileIncrement::attach(increment, all, keys,
                                              hal::laneSlotSize(staging, hal::kLaneSlots)));
    // Then each GPU's BOs into its lane (the pieces point into `chunks`, which stays put).
    std::vector<std::vector<hal::DumpImage>> lanes(jobs.size());
    size_t next = 0;
    for (size_t g = 0; g < jobs.size(); ++g)
        for (size_t k = 0; k < jobs[g].bos.size(); ++k)
            lanes[g].push_back(std::move(all[next++]));
    std::vector<std::function<hal::Result<PagesDigest>()>> work;
    for (size_t g = 0; g < jobs.size(); ++g)
        work.push_back([&kernel, &jobs, &lanes, g, staging] {
            return dumpLane(kernel, jobs[g], lanes[g], staging);
        });
    HAL_TRY(runPerGpu(std::move(work)));
    std::map<uint32_t, hal::ContentChecksum> sums;
    for (size_t g = 0; g < jobs.size(); ++g)
        for (size_t k = 0; k < jobs[g].bos.size(); ++k)
            if (lanes[g][k].checksum)
                sums[jobs[g].bos[k].index] = *lanes[g][k].checksum;
    HAL_TRY(chunks.writeRecord(store, fileId));
    return sums;
}

hal::Result<void> checkBoFiles(hal::ImageStore& store, const hal::RestoreChain* chain,
                               const GpuTransfer& job) {
    for (const TransferBo& bo : job.bos) {
        HAL_TRY_ASSIGN(hal::RestoreImage image, restoreImageOf(store, chain, job, bo));
        if (store.rereadable()) // a stream can be read once: the copy checks it on the way
            HAL_TRY_CONTEXT(image.open(), "the contents of %s of GPU %s", boWhat(bo).c_str(),
                            hal::gpuIdHex(job.gpuId).c_str());
    }
    return hal::success();
}

hal::Result<void> restoreBoFiles(KernelInterface& kernel, hal::ImageStore& store,
                                 const hal::RestoreChain* chain, const GpuTransfer& job,
                                 std::span<std::byte> staging) {
    if (job.bos.empty())
        return hal::success();
    HAL_TRY_ASSIGN(std::unique_ptr<sdma::Engine> engine, openEngine(kernel, job, staging));
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    std::vector<hal::RestoreImage> images;
    for (const TransferBo& bo : job.bos) {
        HAL_TRY_ASSIGN(hal::RestoreImage image, restoreImageOf(store, chain, job, bo));
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, bo));
        image.pieces.push_back({nullptr, pieces.back().get(), bo.size, boWhat(bo)});
        images.push_back(std::move(image));
    }
    HAL_TRY(hal::runRestoreLane(images, laneFor(job, staging)));
    return hal::success();
}

} // namespace kfd
