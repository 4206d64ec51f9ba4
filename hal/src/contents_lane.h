#pragma once
// Running one lane of BO contents files (hal/bo_contents.h), whichever layout they are in:
// internal to the HAL's recipe (bo_contents.cpp, gpu_pages_files.cpp).
#include "hal/bo_contents.h"

#include "base/result.h"
#include "content/stream.h"
#include "datapath/content_pipeline.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hal {

/// The sum of the sizes of `lane`'s BOs; an Image error when it does not fit in 64 bits (sizes
/// read from an image can be anything).
Result<uint64_t> laneBytes(const ContentsLane& lane);

/// Runs `run` over `images` (those of `lane`'s BOs, their pieces in the order of the lane's
/// BOs) on the lane's staging area, or on one of its own of `lane.stagingBytes`. When the lane
/// has a device end (`lane.open`) and anything to move, it is opened first, over the staging
/// area, and its sources and sinks stand in for the pieces'.
template <typename Image, typename Run>
Result<void> runLane(ContentsLane& lane, std::vector<Image>& images, bool holes, Run run) {
    if (images.empty())
        return base::success();
    std::optional<content::StagingBuffer> own;
    std::span<std::byte> staging = lane.staging;
    if (staging.empty())
        staging = own.emplace(lane.stagingBytes).span();
    std::unique_ptr<LaneDevice> device;
    if (lane.open && !lane.bos.empty()) {
        HAL_TRY_ASSIGN(device, lane.open(staging));
        size_t bo = 0;
        for (Image& image : images)
            for (datapath::ContentPiece& piece : image.pieces) {
                piece.source = device->source(bo);
                piece.sink = device->sink(bo);
                ++bo;
            }
    }
    datapath::LaneOptions options;
    options.gpu = lane.gpu;
    options.staging = staging;
    options.holes = holes;
    return run(images, options);
}

} // namespace hal
