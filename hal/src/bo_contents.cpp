// The recipe of BO contents files, once for every backend (hal/bo_contents.h): the dump's
// (Device::saveBoContents) and the restore's (restoreBoContents).
#include "hal/device.h"

#include "contents_lane.h"
#include "gpu_pages_files.h"

#include "base/at_once.h"
#include "base/log.h"
#include "datapath/image_increment.h"
#include "formats/framed_image.h"
#include "formats/image_names.h"
#include "formats/packed_image.h"

#include <algorithm>

namespace hal {

using base::Result;
using base::runAtOnce;
using base::success;
using content::StagingBuffer;
using datapath::DumpImage;
using datapath::FileIncrement;
using datapath::IncrementalDump;
using datapath::kLaneSlots;
using datapath::LaneOptions;
using datapath::laneSlotSize;
using datapath::nameRestoreImage;
using datapath::RestoreChain;
using datapath::RestoreImage;
using datapath::runDumpLane;
using datapath::runRestoreLane;
using formats::BoKey;
using formats::checkContentsSize;
using formats::Codec;
using formats::CodecSpec;
using formats::createContentsImage;
using formats::drmPagesImageName;
using formats::FramedImage;
using formats::ImageStore;
using formats::kfdBoImageName;
using formats::openContentsImage;

std::string boFileName(const BoFileId& id) {
    return id.family == BoFileFamily::KfdBo ? kfdBoImageName(id.fileId, id.gpu, id.index)
                                            : drmPagesImageName(id.fileId, id.gpu, id.index);
}

namespace {

/// The slot size of a lane (its staging area, given or its own).
uint64_t slotSizeOf(const ContentsLane& lane) {
    return laneSlotSize(lane.staging.empty() ? lane.stagingBytes : lane.staging.size(), kLaneSlots);
}

/// Sizes the staging area a lane without one takes of its share (laneStagingBytes). A lane given
/// one keeps it whole: its device end may be bound to it already (amdgpu-drm's SDMA engine
/// registers the whole area and copies at its slots).
void fitStaging(ContentsLane& lane, bool pagesFile) {
    if (!lane.staging.empty())
        return;
    lane.stagingBytes = laneStagingBytesOf(lane.stagingBytes, lane, pagesFile);
}

} // namespace

Result<RestoreImage> restoreImageOf(ImageStore& store, const RestoreChain* chain,
                                    const BoContents& bo) {
    RestoreImage image;
    image.name = boFileName(bo.file);
    HAL_TRY(nameRestoreImage(store, chain, image, bo.key));
    // CRIU's plugin reads the size header and skips it (its writer leaves it undefined): the
    // BO's size in the image says how many bytes follow.
    image.open = [&store, name = image.name, size = bo.size]() -> Result<FramedImage> {
        HAL_TRY_ASSIGN(FramedImage opened, openContentsImage(store, name));
        HAL_TRY(checkContentsSize(opened, size, "the BO holds"));
        return opened;
    };
    image.pieces.push_back({nullptr, bo.sink, bo.size, bo.what});
    image.expected = bo.checksum;
    return image;
}

Result<void> checkContentsFiles(ImageStore& store, const RestoreChain* chain,
                                const ContentsLane& lane) {
    if (lane.pagesFile)
        return checkGpuPagesFile(store, lane);
    for (const BoContents& bo : lane.bos) {
        HAL_TRY_ASSIGN(RestoreImage image, restoreImageOf(store, chain, bo));
        if (store.rereadable()) // a stream can be read once: the copy checks it on the way
            HAL_TRY_CONTEXT(image.open(), "the contents of %s of %s", bo.what.c_str(),
                            lane.gpu.c_str());
    }
    return success();
}

Result<void> restoreBoContents(ImageStore& store, const RestoreChain* chain, ContentsLane& lane) {
    // A GPU pages file is never a delta of a parent: its slots need hold no whole chunks.
    fitStaging(lane, lane.pagesFile.has_value());
    if (lane.pagesFile)
        return restoreGpuPagesFile(store, lane);
    std::vector<RestoreImage> images;
    for (const BoContents& bo : lane.bos) {
        HAL_TRY_ASSIGN(RestoreImage image, restoreImageOf(store, chain, bo));
        images.push_back(std::move(image));
    }
    return runLane(
        lane, images, true,
        [](std::vector<RestoreImage>& files, const LaneOptions& options) -> Result<void> {
            HAL_TRY(runRestoreLane(files, options));
            return success();
        });
}

Result<const IncrementalDump*> Device::contentsIncrement() {
    auto increment = incrementalDump();
    if (increment.ok() || !settings().parentImages.empty() || !fullDumpWithoutParentRecords())
        return increment;
    // Only criu's parent link leads here: the option, and a parent's keys when the checkpoint is
    // encrypted, were checked before the pause (pauseProcess).
    std::lock_guard<std::mutex> lock(formatsMutex_);
    if (!incremental_) {
        HAL_LOG_INFO("%s: criu's parent link is no parent for the GPU contents (%s): a full dump",
                     backendName_.c_str(), increment.error().message().c_str());
        incremental_ = std::make_unique<IncrementalDump>();
    }
    return incremental_.get();
}

Result<bool> Device::contentsInFilesOfOurs() {
    HAL_TRY_ASSIGN(CodecSpec codec, contentCodec());
    HAL_TRY_ASSIGN(const IncrementalDump* increment, contentsIncrement());
    // CRIU's pages files are never compressed, encrypted or a delta of a parent.
    return codec.codec != Codec::None || increment->hasParent() ||
           settings().contentEncryption != "none";
}

Result<ContentsFiles> Device::saveBoContents(uint32_t fileId, std::vector<ContentsLane>& lanes) {
    HAL_TRY_ASSIGN(ImageStore * store, images());
    HAL_TRY_ASSIGN(bool ours, contentsInFilesOfOurs());
    bool holes = settings().contentHoles;
    bool pagesFiles =
        !ours && std::all_of(lanes.begin(), lanes.end(),
                             [](const ContentsLane& lane) { return lane.pagesFile.has_value(); });
    for (ContentsLane& lane : lanes)
        fitStaging(lane, pagesFiles);
    if (pagesFiles) {
        HAL_TRY(runAtOnce(lanes.size(),
                          [&](size_t l) { return saveGpuPagesFile(*store, lanes[l], holes); }));
        return ContentsFiles::Criu;
    }
    HAL_TRY_ASSIGN(const IncrementalDump* increment, contentsIncrement());
    HAL_TRY_ASSIGN(CodecSpec codec, contentCodec());
    // Every BO of every lane in one list first: the chunk record covers the whole file and
    // compares it against one record of the parent.
    std::vector<DumpImage> all;
    std::vector<BoKey> keys;
    uint64_t slotSize = 0;
    for (const ContentsLane& lane : lanes) {
        slotSize = slotSize ? std::min(slotSize, slotSizeOf(lane)) : slotSizeOf(lane);
        for (const BoContents& bo : lane.bos) {
            DumpImage image;
            image.name = increment->contentsName(boFileName(bo.file), codec);
            image.create = [store, name = image.name, size = bo.size, codec] {
                return createContentsImage(*store, name, size, codec);
            };
            image.pieces.push_back({bo.source, nullptr, bo.size, bo.what});
            all.push_back(std::move(image));
            keys.push_back(bo.key);
        }
    }
    HAL_TRY_ASSIGN(FileIncrement chunks, FileIncrement::attach(*increment, all, keys, slotSize));
    // Then each lane's images (their pieces point into `chunks`, which stays put).
    std::vector<std::vector<DumpImage>> images(lanes.size());
    auto next = all.begin();
    for (size_t l = 0; l < lanes.size(); ++l)
        for (size_t k = 0; k < lanes[l].bos.size(); ++k)
            images[l].push_back(std::move(*next++));
    HAL_TRY(runAtOnce(lanes.size(), [&](size_t l) {
        return runLane(
            lanes[l], images[l], holes,
            [](std::vector<DumpImage>& files, const LaneOptions& options) -> Result<void> {
                HAL_TRY(runDumpLane(files, options));
                return success();
            });
    }));
    for (size_t l = 0; l < lanes.size(); ++l)
        for (size_t k = 0; k < lanes[l].bos.size(); ++k)
            lanes[l].bos[k].checksum = images[l][k].checksum;
    HAL_TRY(chunks.writeRecord(*store, fileId));
    return ours ? ContentsFiles::Ours : ContentsFiles::Criu;
}

} // namespace hal
