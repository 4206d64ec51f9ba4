#pragma once
/// \file
/// The framing CRIU's own amdgpu plugin gives every image file it writes: it opens each one
/// through open_img_file(), which writes (and at restore reads back) an 8-byte host-endian
/// size_t before the contents. A protobuf image announces its packed size, a GPU's pages file
/// the sum of that GPU's VRAM/GTT BO sizes (checked at restore), a render-node BO's pages file
/// whatever its writer passed (upstream's restore reads and skips it). The header is what lets a
/// reader know a size where the file has none (criu's image streamer).

#include "base/result.h"
#include "formats/image_store.h"

#include <cstdint>
#include <memory>
#include <string>

namespace formats {

using base::Result;

/// Bytes of the size header open_img_file() puts before every image.
inline constexpr uint64_t kImageHeaderBytes = 8;

/// Creates image `name` and writes its header announcing `announced` bytes of contents.
Result<std::unique_ptr<ImageWriter>> createFramedImage(ImageStore& store, const std::string& name,
                                                       uint64_t announced);

/// An image opened for reading, positioned after its header.
struct FramedImage {
    std::unique_ptr<ImageReader> reader;
    uint64_t announced = 0; ///< what the header says
    int64_t contents = -1;  ///< bytes after the header, when the store knows the file's size
};

/// Opens image `name` and reads its header. A file too short to hold the header is an Image
/// error that says what the header is.
Result<FramedImage> openFramedImage(ImageStore& store, const std::string& name);

/// When the file's size is known: an Image error unless exactly `expected` bytes follow its
/// header. `whose` ends the message's sentence before the expected size ("its header
/// announces", "the 4 BOs of GPU 0x1000 hold").
Result<void> checkContentsSize(const FramedImage& image, uint64_t expected,
                               const std::string& whose);

/// After `consumed` bytes of contents were read from `image`: an Image error when more follow
/// (what proves, on a stream, that every byte was accounted for).
Result<void> expectImageEnd(FramedImage& image, uint64_t consumed);

} // namespace formats
