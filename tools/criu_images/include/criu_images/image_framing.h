#pragma once
/// \file
/// The framing of criu's own image files: magic words, then entries, each a 32-bit host-endian
/// size and that many bytes of a packed protobuf message. inventory.img starts with its own
/// magic alone; every other framed image with criu's common (or service) magic and then the
/// image's magic. Raw images (pages-*.img and the like) have no magic and are not read here.

#include "base/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace criu_images {

inline constexpr uint32_t kCommonMagic = 0x54564319;    ///< IMG_COMMON_MAGIC
inline constexpr uint32_t kServiceMagic = 0x55105940;   ///< IMG_SERVICE_MAGIC (stats, caches)
inline constexpr uint32_t kInventoryMagic = 0x58313116; ///< INVENTORY_MAGIC, alone in its file
inline constexpr uint32_t kFilesMagic = 0x56303138;     ///< FILES_MAGIC (files.img)
inline constexpr uint32_t kExtFilesMagic = 0x59255641;  ///< EXT_FILES_MAGIC (ext-files.img)

/// True when `firstWord` (a file's first 4 bytes, host-endian) starts a criu image.
bool isCriuMagic(uint32_t firstWord);

/// One entry of a framed image.
struct Entry {
    uint64_t offset = 0;    ///< of its size word in the file
    std::string_view bytes; ///< the packed message (a view into the parsed buffer)
};

/// A framed criu image, split into its entries.
struct FramedImage {
    uint32_t headMagic = 0; ///< kCommonMagic or kServiceMagic; 0 for inventory.img
    uint32_t magic = 0;     ///< the image's own magic
    std::vector<Entry> entries;
};

/// Splits `bytes`, the whole of file `name`, into its magic words and entries. The error names
/// `name` and the offset where the framing breaks (a cut entry, an unknown first word).
base::Result<FramedImage> parseFramedImage(const std::string& name, std::string_view bytes);

/// The bytes of a framed image: `headMagic` (none when 0), `magic`, then each entry with its
/// size. The inverse of parseFramedImage, for tests and fuzz seeds.
std::string frameImage(uint32_t headMagic, uint32_t magic, const std::vector<std::string>& entries);

} // namespace criu_images
