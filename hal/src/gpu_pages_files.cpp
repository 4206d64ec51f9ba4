// CRIU's pages file of a GPU (hal/bo_contents.h: GpuPagesFile): the KFD layout in which every
// full, uncompressed, plain dump keeps a GPU's BOs, one after the other, so that CRIU's own
// plugin restores it.
#include "gpu_pages_files.h"

#include "contents_lane.h"

#include "base/log.h"
#include "formats/framed_image.h"
#include "formats/image_names.h"
#include "formats/packed_image.h"

namespace hal {

using base::ErrorCode;
using base::makeError;
using base::strFormat;
using base::success;
using datapath::DumpImage;
using datapath::LaneOptions;

std::string gpuPagesFileName(const GpuPagesFile& file) {
    return formats::kfdPagesImageName(file.fileId, file.gpuId);
}

Result<uint64_t> laneBytes(const ContentsLane& lane) {
    uint64_t total = 0;
    for (const BoContents& bo : lane.bos)
        if (__builtin_add_overflow(total, bo.size, &total))
            return makeError(ErrorCode::Image,
                             "the BOs of %s add up to more than 2^64 bytes (%s): the image is "
                             "corrupt",
                             lane.gpu.c_str(), bo.what.c_str());
    return total;
}

Result<FramedImage> openGpuPagesFile(ImageStore& store, const std::string& name,
                                     const std::string& gpu, size_t boCount, uint64_t total) {
    // Through the contents' open: never encrypted, a pages file is refused where the checkpoint
    // is, or where a private key is set (formats/content_keys.h), whatever contents_layout says.
    HAL_TRY_ASSIGN_CONTEXT(FramedImage image, formats::openContentsImage(store, name),
                           "the BO contents of %s are missing or unreadable", gpu.c_str());
    std::string whose = strFormat("the %zu VRAM/GTT BOs of %s hold", boCount, gpu.c_str());
    if (image.announced != total)
        return makeError(ErrorCode::Image,
                         "pages file %s does not belong to its image: its size header says %llu "
                         "bytes, %s %llu",
                         name.c_str(), static_cast<unsigned long long>(image.announced),
                         whose.c_str(), static_cast<unsigned long long>(total));
    HAL_TRY(formats::checkContentsSize(image, total, whose));
    return image;
}

Result<void> checkGpuPagesFile(ImageStore& store, const ContentsLane& lane) {
    HAL_TRY_ASSIGN(uint64_t total, laneBytes(lane));
    if (!store.rereadable())
        return success(); // a stream can be read once: the copy checks it on the way
    HAL_TRY(openGpuPagesFile(store, gpuPagesFileName(*lane.pagesFile), lane.gpu, lane.bos.size(),
                             total));
    return success();
}

Result<void> saveGpuPagesFile(ImageStore& store, ContentsLane& lane, bool holes) {
    HAL_TRY_ASSIGN(uint64_t total, laneBytes(lane));
    std::vector<DumpImage> files(1);
    DumpImage& file = files[0];
    file.name = gpuPagesFileName(*lane.pagesFile);
    file.create = [&store, name = file.name, total] {
        return formats::createFramedImage(store, name, total);
    };
    file.pieces.reserve(lane.bos.size());
    for (const BoContents& bo : lane.bos)
        file.pieces.push_back({bo.source, nullptr, bo.size, bo.what});
    HAL_TRY(runLane(lane, files, holes,
                    [](std::vector<DumpImage>& images, const LaneOptions& options) -> Result<void> {
                        HAL_TRY(datapath::runDumpLane(images, options));
                        return success();
                    }));
    HAL_LOG_INFO("%s: %llu bytes of BO contents written to %s", lane.gpu.c_str(),
                 static_cast<unsigned long long>(total), files[0].name.c_str());
    lane.bytes = total;
    lane.checksum = files[0].checksum;
    return success();
}

Result<void> restoreGpuPagesFile(ImageStore& store, ContentsLane& lane) {
    HAL_TRY_ASSIGN(uint64_t total, laneBytes(lane));
    std::vector<RestoreImage> files(1);
    RestoreImage& file = files[0];
    file.name = gpuPagesFileName(*lane.pagesFile);
    file.open = [&store, &lane, name = file.name, total] {
        return openGpuPagesFile(store, name, lane.gpu, lane.bos.size(), total);
    };
    for (const BoContents& bo : lane.bos)
        file.pieces.push_back({nullptr, bo.sink, bo.size, bo.what});
    file.expected = lane.checksum;
    return runLane(
        lane, files, true,
        [](std::vector<RestoreImage>& images, const LaneOptions& options) -> Result<void> {
            HAL_TRY(datapath::runRestoreLane(images, options));
            return success();
        });
}

} // namespace hal
