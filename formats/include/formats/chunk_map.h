#pragma once
/// \file
/// The record of an incremental checkpoint (issue 23, item 3): for each BO, the 128-bit checksum
/// of each fixed-size chunk of its contents, and whether the chunk's bytes are in this image or
/// in the parent's. A chunk is "in parent" only when the parent's record holds the same BO (same
/// GPU, same VA, same size) with the same chunk size and the same checksum at the same index, so
/// a restore finds every chunk's bytes in the newest image of the chain that holds them.
///
/// The file is ours alone (CRIU's own plugin never reads it), little-endian:
///   "AMDGPUCM" (8 bytes), version u32 (1), parent path length u32 (at most 4096) and its bytes
///   (the parent's chunk record file, relative to this image's directory unless absolute, since
///   criu's file ids in record names change between dumps; empty: no parent), the parent record's
///   checksum (16 bytes: the XXH3-128 of the parent's whole record file, so a changed parent is
///   found), entry count u32, then per entry: gpu id u32, flags u32 (0), va u64, size u64, chunk
///   size u64, chunk count u64, then per chunk: where u8 (0: here, 1: in parent), checksum 16 bytes
///   (XXH3-128: low u64, high u64); then the name of the image file that holds the BO's contents in
///   this checkpoint: length u32 (1 to 255) and its bytes (no '/', no NUL), since file names carry
///   ids that change between dumps.
/// decodeChunkMap checks every field and every length; it never trusts a count to allocate.
/// Two BOs may have the same key (unmapped BOs of one size); each names its own file, and a BO
/// is compared with the first of its key in the parent, so a restore follows the same one.

#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace formats {

using base::Result;

/// The smallest chunk an incremental record may use, and the one it uses by default.
inline constexpr uint64_t kMinIncrementChunk = 4096;
inline constexpr uint64_t kDefaultIncrementChunk = 2ull << 20;

/// A 128-bit checksum (XXH3-128, seed 0): identity of a chunk, not only a check against damage.
struct ChunkSum {
    uint64_t low = 0;
    uint64_t high = 0;
    bool operator==(const ChunkSum&) const = default;
};

/// The XXH3-128 of `data`.
ChunkSum chunkSumOf(std::span<const std::byte> data);

/// chunkSumOf of each `chunkSize` chunk of bytes fed in pieces of any size (the last chunk may be
/// shorter): the same sums, taken while each piece is still in the CPU's cache from another
/// pass over it, instead of reading the bytes from memory again.
class ChunkSums {
public:
    explicit ChunkSums(uint64_t chunkSize);
    ~ChunkSums();
    ChunkSums(const ChunkSums&) = delete;
    ChunkSums& operator=(const ChunkSums&) = delete;
    void feed(std::span<const std::byte> bytes);
    /// The sums of every chunk fed, the last one ended where the bytes ended.
    const std::vector<ChunkSum>& finish();

private:
    void endChunk();
    uint64_t chunkSize_;
    uint64_t inChunk_ = 0; ///< bytes of the current chunk fed
    void* state_;          ///< XXH3_state_t
    std::vector<ChunkSum> sums_;
};

/// Where a chunk's bytes are.
enum class ChunkPlace : uint8_t {
    Here = 0,     ///< in this image's contents
    InParent = 1, ///< in the parent image (or further up the chain)
};

/// One chunk of a BO.
struct ChunkRecord {
    ChunkPlace place = ChunkPlace::Here;
    ChunkSum sum;
    bool operator==(const ChunkRecord&) const = default;
};

/// What identifies a BO across checkpoints: same GPU, same VA, same size.
struct BoKey {
    uint32_t gpuId = 0;
    uint64_t va = 0;
    uint64_t size = 0;
    bool operator==(const BoKey&) const = default;
};

/// One BO's chunks; the last chunk may be shorter than `chunkSize`.
struct BoChunks {
    BoKey key;
    uint64_t chunkSize = kDefaultIncrementChunk;
    std::vector<ChunkRecord> chunks;
    std::string file; ///< the image file of its contents in this checkpoint
    bool operator==(const BoChunks&) const = default;
};

/// The longest parent path a record may hold.
inline constexpr uint32_t kMaxParentPath = 4096;

/// The chunks of every BO of one image.
struct ChunkMap {
    /// The parent image's chunk record file, relative to this image's directory (or absolute);
    /// empty: none, and no chunk may then be "in parent".
    std::string parent;
    /// The XXH3-128 of the parent's record file as it was at this dump.
    ChunkSum parentRecord;
    std::vector<BoChunks> bos;
    /// The first BO with `key`, or null.
    const BoChunks* find(const BoKey& key) const;
    /// The BO whose contents are in `file`, or null.
    const BoChunks* findFile(const std::string& file) const;
};

/// How many chunks of `chunkSize` cover `size` bytes (0 for 0 bytes).
uint64_t chunkCount(uint64_t size, uint64_t chunkSize);

/// The longest file name an entry may hold.
inline constexpr uint32_t kMaxChunkFileName = 255;

/// The checksums of `data` (a whole BO's contents, in `file`) chunk by chunk, every chunk "here".
BoChunks sumChunks(const BoKey& key, uint64_t chunkSize, std::span<const std::byte> data,
                   const std::string& file = "contents.img");

/// Marks "in parent" each chunk of `current` whose checksum the parent's record of the same BO
/// (same key, same chunk size) holds at the same index; a BO the parent lacks stays "here".
/// Returns how many bytes stay "here".
uint64_t markInParent(BoChunks& current, const ChunkMap& parent);

/// The file's bytes.
std::string encodeChunkMap(const ChunkMap& map);

/// The map in `bytes`; an Image error naming `file` and the field for anything malformed.
Result<ChunkMap> decodeChunkMap(std::string_view bytes, const std::string& file);

} // namespace formats
