#include "datapath/content_pipeline.h"

#include "lane_machinery.h"

namespace datapath {

using base::Result;
using base::strFormat;
using base::success;
using formats::ImageStore;

using namespace lane_internal;

LazySource::LazySource(uint64_t size, Make make) : size_(size), make_(std::move(make)) {}
LazySource::~LazySource() = default;

Result<void> LazySource::read(uint64_t offset, std::span<std::byte> out) {
    if (!made_) {
        HAL_TRY_ASSIGN(made_, make_());
    }
    HAL_TRY(made_->read(offset, out));
    if (offset + out.size() >= size_)
        made_.reset();
    return success();
}

LazySink::LazySink(uint64_t size, Make make) : size_(size), make_(std::move(make)) {}
LazySink::~LazySink() = default;

Result<void> LazySink::write(uint64_t offset, std::span<const std::byte> in) {
    if (!made_) {
        HAL_TRY_ASSIGN(made_, make_());
    }
    HAL_TRY(made_->write(offset, in));
    if (offset + in.size() >= size_)
        made_.reset();
    return success();
}

uint64_t laneSlotSize(uint64_t stagingBytes, uint32_t count) {
    if (count == 0)
        return 0;
    return stagingBytes / count / kPage * kPage;
}

void fetchFilesAhead(RestoreImage& image, ImageStore& store, std::vector<std::string> files) {
    image.readAhead = [&store, files = std::move(files)](uint64_t bytes) {
        for (const std::string& file : files)
            store.readAhead(file, bytes);
    };
}

std::string describeThroughput(uint64_t bytes, double seconds) {
    return strFormat("%llu bytes in %.3f s (%.1f MiB/s)", static_cast<unsigned long long>(bytes),
                     seconds, seconds > 0 ? static_cast<double>(bytes) / seconds / (1 << 20) : 0.0);
}

} // namespace datapath
