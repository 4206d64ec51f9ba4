#pragma once
/// \file
/// Incremental checkpoints as a backend uses them (issue 23): at dump, which record of the parent
/// the contents of each file are compared against, the names its contents files take and the
/// record it leaves; at restore, the chain each BO's contents are assembled from. The record is
/// formats/chunk_map.h, the chain formats/image_chain.h, the lanes that skip and assemble the
/// chunks datapath/content_pipeline.h.
///
/// Every dump into a directory leaves a record per file (`amdgpu-chunks-<id>.img`), so any
/// checkpoint can be the parent of the next. Names are relative to the image directory and opened
/// from its fd, so a restore inside a container's root still finds a parent beside the images.

#include "base/result.h"
#include "datapath/content_pipeline.h"
#include "formats/chunk_codec.h"
#include "formats/chunk_map.h"
#include "formats/image_chain.h"
#include "formats/image_store.h"
#include "formats/render_node_image.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace datapath {

using base::Result;
using formats::BoChunks;
using formats::BoKey;
using formats::ChainBudget;
using formats::ChainLevel;
using formats::ChunkMap;
using formats::ChunkSum;
using formats::CodecSpec;
using formats::DrmBoEntry;
using formats::ImageStore;
using formats::SealKeys;

/// The name a contents file takes in a checkpoint dumped against a parent: "amdgpu-" becomes
/// "amdgpu-delta-". CRIU's own plugin looks for its names, does not find them and fails, instead
/// of restoring holes where the parent's bytes belong.
std::string deltaImageName(const std::string& name);

/// What identifies a BO of a render-node image of GPU `gpuId` across checkpoints: its first GPU
/// mapping's VA (0 when unmapped) and its size.
BoKey boKeyOf(uint32_t gpuId, const DrmBoEntry& bo);

/// A record of the parent that a dump compares against.
struct ParentRecord {
    std::string name; ///< relative to the child's image directory, as the child records it
    ChunkSum sum;     ///< the XXH3-128 of the record file
    ChunkMap map;
};

/// The dump side.
class IncrementalDump {
public:
    /// The parent of a dump into `store` (option `parent-images`, `parentOption`, else criu's
    /// `parent` link). Every record in the parent's directory is read and its chain checked,
    /// so a parent whose own parents are gone or changed is refused now, naming the file, not at
    /// restore. An error too when the parent holds no record, and for the option through criu's
    /// image streamer.
    static Result<IncrementalDump> open(ImageStore& store, const std::string& parentOption);

    /// True when the dump has a parent.
    bool hasParent() const { return parentDir_.has_value(); }
    /// The parent's directory, relative to the image directory (when hasParent()).
    const std::string& parentDir() const { return *parentDir_; }
    /// The name of a contents file of this dump that a full, uncompressed one calls `name`: its
    /// delta name when the dump has a parent, packed (formats/packed_image.h) when `spec`
    /// compresses or the checkpoint is encrypted (formats/content_keys.h).
    std::string contentsName(const std::string& name, const CodecSpec& spec = {}) const;
    /// The keys this dump's contents are sealed with; null when it is not encrypted.
    const SealKeys* sealKeys() const { return sealKeys_.get(); }
    /// The record the contents of one file are compared against: of the parent's records, the
    /// one holding the most of `keys` (the first in name order on a tie); null when none holds
    /// any, or there is no parent.
    const ParentRecord* match(std::span<const BoKey> keys) const;
    /// Writes the record of the file whose images carry `id`: `bos`, against `parent` (null: a
    /// full dump). Through criu's image streamer none is written: a checkpoint there cannot be
    /// a parent.
    Result<void> writeRecord(ImageStore& store, uint32_t id, const std::vector<BoChunks>& bos,
                             const ParentRecord* parent) const;

private:
    std::optional<std::string> parentDir_;
    std::vector<ParentRecord> records_;
    std::shared_ptr<const SealKeys> sealKeys_;
};

/// The chunk size a lane whose slots are `slotSize` bytes records: kDefaultIncrementChunk, or
/// the largest power of two that divides a smaller slot (a lane's chunks must start on a chunk).
uint64_t incrementChunkFor(uint64_t slotSize);

/// The chunk records of one file's dump. Made over the file's contents images, one BO each
/// (`keys[i]` the key of images[i]'s BO), named with dump.contentsName() already: it sets each
/// image's piece up to record its chunks and leave out those the best matching parent record
/// holds. After the lane, writeRecord() leaves the file's record. It must outlive the lane.
class FileIncrement {
public:
    static Result<FileIncrement> attach(const IncrementalDump& dump, std::vector<DumpImage>& images,
                                        const std::vector<BoKey>& keys, uint64_t slotSize);
    /// Writes the record of the file whose images carry `id`.
    Result<void> writeRecord(ImageStore& store, uint32_t id) const;

private:
    FileIncrement(const IncrementalDump& dump, const ParentRecord* parent, size_t count)
        : dump_(&dump), parent_(parent), chunks_(count) {}
    const IncrementalDump* dump_;
    const ParentRecord* parent_;
    std::vector<BoChunks> chunks_; ///< sized once: the images' pieces point into it
};

/// The restore side: the chain of one file's record.
class RestoreChain {
public:
    /// The chain of the file whose images carry `id`; null when the checkpoint has no record
    /// for it or every chunk is in the checkpoint itself. Errors name a parent that is missing
    /// or changed, before any GPU is touched. `budget`: shared by the chains of one checkpoint
    /// (loadChain), else the chain's own.
    static Result<std::shared_ptr<const RestoreChain>> load(ImageStore& store, uint32_t id,
                                                            ChainBudget* budget = nullptr);

    /// Sets `image` up to assemble the BO `key` from the chain: `image.name`, the name a full
    /// dump gives its contents, becomes the one this checkpoint gave them; the images of the
    /// parents it needs and which holds each chunk are set.
    Result<void> attach(RestoreImage& image, const BoKey& key) const;

    const std::vector<ChainLevel>& levels() const { return levels_; }

private:
    RestoreChain(ImageStore& store, std::vector<ChainLevel> levels)
        : store_(&store), levels_(std::move(levels)) {}
    ImageStore* store_;
    std::vector<ChainLevel> levels_;
};

/// Names `image` for a restore, its name set to the one a full, uncompressed dump gives the
/// contents of the BO `key`: from `chain` when the image has one (RestoreChain::attach), else the
/// name `store` holds them under (formats/packed_image.h: packed or not).
Result<void> nameRestoreImage(ImageStore& store, const RestoreChain* chain, RestoreImage& image,
                              const BoKey& key);

} // namespace datapath
