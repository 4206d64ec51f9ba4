#include "chain_contents.h"

#include "datapath/content_pipeline.h"
#include "formats/packed_image.h"

namespace tools::image {

base::Result<void> assembleContents(formats::ImageStore& store, const ContentsFile& f,
                                    content::ContentSink& sink) {
    if (!f.chain)
        return base::makeError(base::ErrorCode::Internal, "%s is not part of a chain",
                               f.name.c_str());
    datapath::RestoreImage image;
    image.name = f.plainName;
    HAL_TRY(f.chain->attach(image, f.key));
    image.open = [&store, name = image.name] { return formats::openContentsImage(store, name); };
    image.pieces.push_back({nullptr, &sink, f.bytes, f.bos.front().label});
    image.expected = f.checksum;
    std::vector<datapath::RestoreImage> images;
    images.push_back(std::move(image));
    content::StagingBuffer staging(8u << 20);
    datapath::LaneOptions options;
    options.gpu = f.owner;
    options.staging = staging.span();
    options.progressSeconds = -1;
    HAL_TRY(datapath::runRestoreLane(images, options));
    return base::success();
}

} // namespace tools::image
