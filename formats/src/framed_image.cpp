#include "formats/framed_image.h"

#include <cstring>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::success;

Result<std::unique_ptr<ImageWriter>> createFramedImage(ImageStore& store, const std::string& name,
                                                       uint64_t announced) {
    HAL_TRY_ASSIGN(auto writer, store.openWrite(name));
    std::byte header[kImageHeaderBytes];
    memcpy(header, &announced, sizeof(header));
    HAL_TRY_CONTEXT(writer->write(header), "writing the size header of %s", name.c_str());
    return writer;
}

Result<FramedImage> openFramedImage(ImageStore& store, const std::string& name) {
    FramedImage image;
    HAL_TRY_ASSIGN(image.reader, store.openRead(name));
    int64_t size = image.reader->size();
    if (size >= 0 && static_cast<uint64_t>(size) < kImageHeaderBytes)
        return makeError(ErrorCode::Image,
                         "image %s holds %lld bytes, fewer than the 8-byte size header every "
                         "amdgpu image starts with",
                         name.c_str(), static_cast<long long>(size));
    std::byte header[kImageHeaderBytes];
    HAL_TRY_CONTEXT(image.reader->readExact(header), "reading the size header of %s", name.c_str());
    memcpy(&image.announced, header, sizeof(header));
    if (size >= 0)
        image.contents = size - static_cast<int64_t>(kImageHeaderBytes);
    return image;
}

Result<void> checkContentsSize(const FramedImage& image, uint64_t expected,
                               const std::string& whose) {
    if (image.contents < 0 || static_cast<uint64_t>(image.contents) == expected)
        return success();
    return makeError(ErrorCode::Image,
                     "image %s is %s: it holds %lld bytes after its size header, %s %llu",
                     image.reader->name().c_str(),
                     static_cast<uint64_t>(image.contents) < expected ? "truncated" : "too long",
                     static_cast<long long>(image.contents), whose.c_str(),
                     static_cast<unsigned long long>(expected));
}

Result<void> expectImageEnd(FramedImage& image, uint64_t consumed) {
    HAL_TRY_ASSIGN(bool end, image.reader->atEnd());
    if (end)
        return success();
    return makeError(ErrorCode::Image,
                     "image %s is too long: bytes follow the %llu its contents should have",
                     image.reader->name().c_str(), static_cast<unsigned long long>(consumed));
}

} // namespace formats
