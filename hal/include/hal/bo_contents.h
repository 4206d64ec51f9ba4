#pragma once
/// \file
/// What a backend tells the HAL about the BO contents of one file, so that the recipe of their
/// files is written once (hal/device.h: Device::saveBoContents; restoreBoContents below): the
/// backend knows each BO's size, identity and its end on the device (a source at dump, a sink at
/// restore); the HAL names the files, chooses their layout, compresses, encrypts, compares with
/// the parent, runs the lanes and keeps the checksums and the chunk record.

#include "base/result.h"
#include "content/digest.h"
#include "content/stream.h"
#include "datapath/content_pipeline.h"
#include "formats/chunk_map.h"
#include "formats/image_store.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace datapath {
class RestoreChain;
} // namespace datapath

namespace hal {

using base::Result;
using content::ContentChecksum;
using content::ContentSink;
using content::ContentSource;
using datapath::RestoreChain;
using datapath::RestoreImage;
using formats::BoKey;
using formats::ImageStore;

/// Which family of contents files a BO's bytes are named in.
enum class BoFileFamily {
    KfdBo,    ///< `amdgpu-kfd-bo-<id>-<gpu_id>-<index>.img` (the kfd backend's files of ours)
    DrmPages, ///< `amdgpu-drm-pages-<id>-<minor>-<index>.img` (CRIU's render-node names)
};

/// The numbers that name one BO's contents file: criu's file id, the GPU (its gpu_id for KfdBo,
/// its render minor for DrmPages) and the BO's index in the file's image.
struct BoFileId {
    BoFileFamily family = BoFileFamily::DrmPages;
    uint32_t fileId = 0;
    uint32_t gpu = 0;
    uint32_t index = 0;
};

/// The name a full, uncompressed dump gives the contents of `id`.
std::string boFileName(const BoFileId& id);

/// One BO of a file whose contents move, as its backend knows it.
struct BoContents {
    BoFileId file; ///< names its contents file
    BoKey key;     ///< identifies it across checkpoints (chunk records)
    uint64_t size = 0;
    std::string what;                ///< how messages name it: "BO 3 (VRAM, 1048576 bytes)"
    ContentSource* source = nullptr; ///< dump: where its bytes come from (or LaneDevice's)
    ContentSink* sink = nullptr;     ///< restore: where they go (or LaneDevice's)
    /// Dump: out, the checksum of its contents once written. Restore: the one the dump recorded
    /// (none in other writers' images).
    std::optional<ContentChecksum> checksum;
};

/// The device end of a lane that must be opened on the lane's own thread, over its staging area
/// (kfd: a GPU's SDMA engine): the sources (dump) or sinks (restore) of the lane's BOs, by their
/// place in the lane. Dropped when the lane ends.
class LaneDevice {
public:
    virtual ~LaneDevice() = default;
    virtual ContentSource* source(size_t bo) = 0;
    virtual ContentSink* sink(size_t bo) = 0;
};

/// The BOs of one GPU of a file, moved in one lane.
struct ContentsLane {
    std::string gpu;              ///< how progress lines and errors name the GPU ("GPU 0x1234")
    std::span<std::byte> staging; ///< the lane's staging area; empty: `stagingBytes` of its own
    uint64_t stagingBytes = 0;    ///< with no `staging`: the size of the area the lane allocates
    std::vector<BoContents> bos;
    /// When set: opens the lane's device end over its staging area, on the lane's thread, before
    /// the first byte moves (not called for a lane without BOs); the BOs' own source and sink are
    /// then not used.
    std::function<Result<std::unique_ptr<LaneDevice>>(std::span<std::byte> staging)> open;
};

/// The image the contents of `bo` (of criu file `bo.file.fileId`) are restored from: named as
/// this checkpoint holds them (or, through `chain`, the checkpoints it is a delta of), opened
/// packed or not with its size checked against the BO's, the dump's checksum expected, and its
/// one piece going to `bo.sink`.
Result<RestoreImage> restoreImageOf(ImageStore& store, const RestoreChain* chain,
                                    const BoContents& bo);

/// Restores the BOs of `lane`, each from its image (restoreImageOf), in one lane over the lane's
/// staging area.
Result<void> restoreBoContents(ImageStore& store, const RestoreChain* chain, ContentsLane& lane);

} // namespace hal
