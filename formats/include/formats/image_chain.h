#pragma once
/// \file
/// The chain of an incremental checkpoint: the image directory, its parent, the parent's parent,
/// each with its chunk record (formats/chunk_map.h). Which parent a dump compares against follows
/// criu's own rule: a path relative to the image directory (option `parent-images`), or criu's
/// `parent` link in the image directory when there is one. Every level is checked before any GPU
/// is touched: a parent that is missing, or whose record is not the one the child was dumped
/// against, is an error naming the file.

#include "base/result.h"
#include "formats/chunk_map.h"
#include "formats/image_store.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace formats {

using base::Result;

/// The name of the chunk record of the checkpoint whose images carry `id`.
std::string chunkMapImageName(uint32_t id);

/// The deepest chain a restore follows.
inline constexpr size_t kMaxChainDepth = 64;
/// The largest chunk record read: 17 bytes a chunk, so 16 MiB records 1.9 TiB of BOs in chunks
/// of 2 MiB (kDefaultIncrementChunk).
inline constexpr uint64_t kMaxChunkRecordBytes = 16ull << 20;
/// The chunk record bytes one chain (or, shared, one checkpoint's chains) may read in all: with
/// each record capped, a crafted checkpoint of deep chains or of many records naming the same
/// parents costs no more than this (the decoded records take about twice the bytes).
inline constexpr uint64_t kMaxChainBudget = 256ull << 20;

/// What is left of kMaxChainBudget; share one among the chains of a checkpoint.
class ChainBudget {
public:
    explicit ChainBudget(uint64_t bytes = kMaxChainBudget) : left_(bytes) {}
    /// Takes `bytes` for `record`; an Image error naming it when the budget is spent.
    Result<void> take(uint64_t bytes, const std::string& record);

private:
    uint64_t left_;
};

/// The directory a dump into `store` compares against, as a name relative to the store's
/// directory (or absolute): `parentOption` when set, which must then be a directory (an error
/// naming the option); else criu's `parent` link when the store has one that leads to a
/// directory (one that leads nowhere is not a parent: the dump is then a full one); else none.
Result<std::optional<std::string>> parentDirectory(ImageStore& store,
                                                   const std::string& parentOption);

/// One image of a chain.
struct ChainLevel {
    std::string record; ///< its chunk record, named relative to the store's directory
    std::string dir;    ///< the directory of `record`, relative to the store's ("" for its own)
    ChunkMap map;
    ChunkSum recordSum; ///< the XXH3-128 of the record file
    /// The name, relative to the store's directory, of `file` in this level's directory.
    std::string nameOf(const std::string& file) const;
};

/// Reads the chunk record `name` of `store` whole (at most kMaxChunkRecordBytes, taken from
/// `budget`); errors name it.
Result<std::string> readWholeImage(ImageStore& store, const std::string& name, ChainBudget& budget);

/// The chain that starts at the record `recordName` of `store`, newest first: each level's
/// parent is the record file its record names (relative to the level's directory), whose
/// checksum must be the one the child recorded. A parent path is checked before anything is
/// opened (formats/image_open.h: not absolute, not out of the image directory's parent), and each
/// record is read once: one that names a record already in the chain is a loop. Errors name the
/// missing, changed or refused file; a chain deeper than kMaxChainDepth, or reading more than
/// `budget` allows (its own kMaxChainBudget when none is given), is an error too.
Result<std::vector<ChainLevel>> loadChain(ImageStore& store, const std::string& recordName,
                                          ChainBudget* budget = nullptr);

/// The index in `chain` of the image that holds the bytes of chunk `chunk` of the BO `key`: the
/// first level that has it "here". An Image error when a level lacks the BO (or the chunk) or the
/// oldest says "in parent".
Result<size_t> levelHolding(std::span<const ChainLevel> chain, const BoKey& key, uint64_t chunk);

/// Bytes each level of `chain` holds "here", newest first.
std::vector<uint64_t> bytesPerLevel(const std::vector<ChainLevel>& chain);

} // namespace formats
