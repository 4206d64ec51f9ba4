#include "chain_contents.h"

#include "datapath/content_pipeline.h"
#include "formats/packed_image.h"

namespace tools::image {

hal::Result<void> assembleContents(hal::ImageStore& store, const ContentsFile& f,
                                   hal::ContentSink& sink) {
    if (!f.chain)
        return hal::makeError(hal::ErrorCode::Internal, "%s is not part of a chain",
                              f.name.c_str());
    hal::RestoreImage image;
    image.name = f.plainName;
    HAL_TRY(f.chain->attach(image, f.key));
    image.open = [&store, name = image.name] { return hal::openContentsImage(store, name); };
    image.pieces.push_back({nullptr, &sink, f.bytes, f.bos.front().label});
    image.expected = f.checksum;
    std::vector<hal::RestoreImage> images;
    images.push_back(std::move(image));
    hal::StagingBuffer staging(8u << 20);
    hal::LaneOptions options;
    options.gpu = f.owner;
    options.staging = staging.span();
    options.progressSeconds = -1;
    HAL_TRY(hal::runRestoreLane(images, options));
    return hal::success();
}

} // namespace tools::image
