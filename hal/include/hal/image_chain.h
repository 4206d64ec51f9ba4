#pragma once
/// \file
/// The chain of an incremental checkpoint: the image directory, its parent, the parent's parent,
/// each with its chunk record (hal/chunk_map.h). Which parent a dump compares against follows
/// criu's own rule: a path relative to the image directory (option `parent-images`), or criu's
/// `parent` link in the image directory when there is one. Every level is checked before any GPU
/// is touched: a parent that is missing, or whose record is not the one the child was dumped
/// against, is an error naming the file.

#include "hal/chunk_map.h"
#include "hal/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hal {

/// The name of the chunk record of the checkpoint whose images carry `id`.
std::string chunkMapImageName(uint32_t id);

/// The deepest chain a restore follows.
inline constexpr size_t kMaxChainDepth = 64;

/// The directory a dump into `imageDir` compares against: `parentOption` (relative to
/// `imageDir` unless absolute) when set, which must then be a directory; else criu's `parent`
/// link in `imageDir` when it exists (a dangling one is an error naming it); else none.
Result<std::optional<std::string>> parentDirectory(const std::string& imageDir,
                                                   const std::string& parentOption);

/// One image of a chain.
struct ChainLevel {
    std::string dir;    ///< the image directory
    std::string record; ///< the path of its chunk record
    ChunkMap map;
    ChunkSum recordSum; ///< the XXH3-128 of the record file
};

/// Reads the file at `path` whole; an Io error naming it.
Result<std::string> readWholeFile(const std::string& path);

/// The chain that starts at `imageDir` with the record `recordName`, newest first: each level's
/// parent is the one its record names, and must hold a record whose checksum is the one the
/// child recorded. Errors name the missing or changed file; a loop, or a chain deeper than
/// kMaxChainDepth, is an error too.
Result<std::vector<ChainLevel>> loadChain(const std::string& imageDir, const std::string& recordName);

/// The index in `chain` of the image that holds the bytes of chunk `chunk` of the BO `key`: the
/// first level that has it "here". An Image error when a level lacks the BO (or the chunk) or the
/// oldest says "in parent".
Result<size_t> levelHolding(const std::vector<ChainLevel>& chain, const BoKey& key, uint64_t chunk);

/// Bytes each level of `chain` holds "here", newest first.
std::vector<uint64_t> bytesPerLevel(const std::vector<ChainLevel>& chain);

} // namespace hal
