#pragma once
/// \file
/// Contents files compressed frame by frame (option `content-compression`, formats/chunk_codec.h).
/// A packed file is ours alone, under a name of ours ("amdgpu-" becomes "amdgpu-packed-"), so
/// CRIU's own plugin does not find the pages file it looks for and fails instead of restoring
/// compressed bytes: the 8-byte size header every contents file starts with (the raw contents'
/// size), then frames of at most kPackedFrameRaw raw bytes each, in order. Each frame decodes on
/// its own. The writer and the reader sit between a lane and the file: the lane hands raw bytes
/// (and zeros) to the writer and reads raw bytes from the reader, and checks its checksum on the
/// raw bytes, so a frame that decodes to wrong bytes is caught there.

#include "base/result.h"
#include "formats/chunk_codec.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"

#include <cstdint>
#include <memory>
#include <string>

namespace formats {

using base::Result;

/// The raw bytes of each frame of a packed file but the last.
inline constexpr uint64_t kPackedFrameRaw = 2ull << 20;

/// The name a contents file takes when it is packed.
std::string packedImageName(const std::string& name);
/// True for the names packedImageName gives, also behind a directory ("../ck1/amdgpu-packed-...").
bool isPackedImageName(const std::string& name);

/// Creates the contents file `name` of `size` raw bytes: a framed image as ever with codec None,
/// else a packed one (its name must then be a packed name) whose writer compresses what the lane
/// writes, frame by frame. close() writes the last frame; a writer destroyed without it leaves no
/// complete file.
Result<std::unique_ptr<ImageWriter>> createContentsImage(ImageStore& store, const std::string& name,
                                                         uint64_t size, const CodecSpec& spec);

/// Opens the contents file `name`. For a packed name, the reader serves the raw bytes, decoding
/// frame by frame, and `contents` is the raw size its header announces; errors name the file,
/// the frame and the field.
Result<FramedImage> openContentsImage(ImageStore& store, const std::string& name);

/// The name under which `store` holds the contents a full, uncompressed dump calls `plain`:
/// `plain` itself, or its packed name when only that exists.
std::string storedContentsName(ImageStore& store, const std::string& plain);

} // namespace formats
