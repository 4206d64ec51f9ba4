#pragma once
/// \file
/// The image of a dma-buf fd a process holds (`amdgpu-dmabuf_<id>.img`, message
/// criu_dmabuf_node, as CRIU's development-branch plugin writes it): which BO the dma-buf
/// exports. The plugin names the BO by its GEM handle; this project adds the dma-buf's identity
/// and the render-node file of the BO (fields >= 100, which CRIU skips).

#include "base/result.h"
#include "formats/image_names.h"
#include "formats/image_store.h"

#include <cstdint>
#include <optional>
#include <string>

namespace formats {

using base::Result;

/// One dma-buf fd.
struct DmabufImage {
    uint32_t id = 0;                      ///< criu's file id of the dma-buf fd
    uint32_t gemHandle = 0;               ///< the exported BO's GEM handle
    std::optional<uint64_t> shareKey;     ///< project addition: the dma-buf's identity at dump
    std::optional<uint32_t> renderFileId; ///< project addition: criu's id of the BO's render node
};

/// Writes the image for criu file id `image.id`.
Result<void> writeDmabufImage(ImageStore& store, const DmabufImage& image);
/// Reads the image of criu file id `id`; one without gem_handle is an Image error.
Result<DmabufImage> readDmabufImage(ImageStore& store, uint32_t id);

} // namespace formats
