#pragma once
/// \file
/// What a backend tells the HAL about the BO contents of one file, so that the recipe of their
/// files is written once (hal/device.h: Device::saveBoContents; restoreBoContents below): the
/// backend knows each BO's size, identity and its end on the device (a source at dump, a sink at
/// restore); the HAL names the files, chooses their layout (CRIU's pages files or files of ours),
/// sizes the lanes' staging, compresses, encrypts, compares with the parent, runs the lanes and
/// keeps the checksums and the chunk record. A backend includes this header for all of it, never
/// `datapath/` or the contents headers of `formats/` (the backends' READMEs, checked by the build).

#include "base/result.h"
#include "content/digest.h"
#include "content/stream.h"
#include "datapath/content_pipeline.h"
#include "datapath/image_increment.h"
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

namespace hal {

using base::Result;
using content::ContentChecksum;
using content::ContentSink;
using content::ContentSource;
using datapath::boKeyOf;
using datapath::kLaneSlots;
using datapath::LazySink;
using datapath::LazySource;
using datapath::RestoreChain;
using datapath::RestoreImage;
using formats::BoKey;
using formats::FramedImage;
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

/// Where CRIU's layout keeps the BOs of a lane of one GPU together (KFD's): one pages file,
/// `amdgpu-pages-<file id>-<gpu_id>.img`, framed with the sum of their sizes, then their bytes in
/// order. Every GPU of a KFD file has one, a GPU without BOs a file with header 0.
struct GpuPagesFile {
    uint32_t fileId = 0; ///< criu's file id
    uint32_t gpuId = 0;  ///< the GPU's gpu_id in the checkpoint
};

/// The name of `file`.
std::string gpuPagesFileName(const GpuPagesFile& file);

/// Which files a dump wrote its BO contents to.
enum class ContentsFiles {
    Criu, ///< CRIU's pages files: full, uncompressed, plain (upstream's plugin reads them)
    Ours, ///< a file of ours per BO: compressed, encrypted or a delta of a parent
};

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
    std::string gpu; ///< how progress lines and errors name the GPU ("GPU 0x1234")
    /// The lane's staging area, used whole (its device end may be bound to it); empty: one of
    /// its own.
    std::span<std::byte> staging;
    /// With no `staging`: the most the lane's own area may take (its share of `max-buffer-size`);
    /// it takes what its BOs need of it (laneStagingBytes).
    uint64_t stagingBytes = 0;
    std::vector<BoContents> bos;
    /// Set: CRIU's layout keeps the lane's BOs in this one pages file of their GPU (KFD); unset:
    /// a file per BO (render nodes). At restore, set only when the dump wrote CRIU's files.
    std::optional<GpuPagesFile> pagesFile;
    /// The pages file's checksum: at dump, out (when CRIU's files were written); at restore, the
    /// one the dump recorded (none in other writers' images).
    std::optional<ContentChecksum> checksum;
    uint64_t bytes = 0; ///< dump, out: the bytes of the pages file (after its size header)
    /// When set: opens the lane's device end over its staging area, on the lane's thread, before
    /// the first byte moves (not called for a lane without BOs); the BOs' own source and sink are
    /// then not used.
    std::function<Result<std::unique_ptr<LaneDevice>>(std::span<std::byte> staging)> open;
};

/// The smallest slot of a lane of a GPU pages file (its dump or its restore).
inline constexpr uint64_t kMinPagesSlot = 256ull << 10;
/// A lane of a GPU pages file takes slots of this fraction of its largest BO.
inline constexpr uint64_t kPagesSlotsPerLargestBo = 8;

/// The staging a lane of BOs of `sizes` allocates out of its share `share`: no more than the
/// BOs rounded up to whole incremental chunks per lane slot (8 MiB with four slots of 2 MiB
/// chunks), so a lane smaller than its share does not pay for the rest of it and a parent and its
/// child dump record the same chunks. A lane of a GPU pages file (`pagesFile`, dump or restore),
/// which records no chunks, takes slots of an eighth of its largest BO (kMinPagesSlot at least, in
/// whole pages), so its kLaneSlots slots hold half that BO: with slots as large as the BOs, a lane
/// of small BOs keeps kLaneSlots whole BOs resident at once, and CRIU's plugin stages the whole
/// largest BO (bench.vs_upstream: with a quarter, criu's peak RSS at 16 BOs of 1 MiB and the
/// thunk's 2 MiB BO was 1.06-1.13 x CRIU's plugin's; dump and restore times are the same
/// either way within the runs' spread). Never less than a page per slot.
uint64_t laneStagingBytes(uint64_t share, std::span<const uint64_t> sizes, bool pagesFile);
/// The staging `lane` allocates out of `share`: laneStagingBytes of its BOs' sizes.
uint64_t laneStagingBytesOf(uint64_t share, const ContentsLane& lane, bool pagesFile);

/// Opens the GPU pages file `name` whose `boCount` BOs hold `total` bytes (`gpu` names the GPU)
/// and checks its size header (CRIU's "size mismatch" check) and, when the store knows it, its
/// size against `total`.
Result<FramedImage> openGpuPagesFile(ImageStore& store, const std::string& name,
                                     const std::string& gpu, size_t boCount, uint64_t total);

/// Before any GPU is touched: the contents files of `lane` exist, in this checkpoint or through
/// `chain` in its parents, of the sizes of its BOs (a stream can be read once: only their names
/// are checked, the copy checks the rest on the way).
Result<void> checkContentsFiles(ImageStore& store, const RestoreChain* chain,
                                const ContentsLane& lane);

/// The image the contents of `bo` (of criu file `bo.file.fileId`) are restored from: named as
/// this checkpoint holds them (or, through `chain`, the checkpoints it is a delta of), opened
/// packed or not with its size checked against the BO's, the dump's checksum expected, and its
/// one piece going to `bo.sink`.
Result<RestoreImage> restoreImageOf(ImageStore& store, const RestoreChain* chain,
                                    const BoContents& bo);

/// Restores the BOs of `lane`, from its GPU pages file when it names one, else each from its
/// image (restoreImageOf), in one lane over the lane's staging area.
Result<void> restoreBoContents(ImageStore& store, const RestoreChain* chain, ContentsLane& lane);

} // namespace hal
