#pragma once
/// \file
/// Finding the runs of zero bytes of BO contents that an image file can leave out as holes. A
/// run is made of whole blocks of kHoleBlock bytes at file offsets that are multiples of it (the
/// file system's blocks, so a hole is a real hole), and of the parts of such blocks that begin or
/// end a chunk (a writer joins those with the runs of the chunks around them, see
/// ImageWriter::writeZeros). The check of a block stops at its first byte that is not zero, so a
/// block of data costs a few loads.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace content {

/// The granularity of holes: the block of ext4, XFS and tmpfs on 4 KiB pages.
inline constexpr uint64_t kHoleBlock = 4096;

/// True when every byte of `bytes` is zero.
bool isAllZero(std::span<const std::byte> bytes);

/// A run of bytes of a chunk, from the chunk's first byte.
struct ByteRun {
    uint64_t offset = 0;
    uint64_t length = 0;
    bool operator==(const ByteRun&) const = default;
};

/// Finds the zero runs of one chunk fed in consecutive pieces (each piece while it is in the
/// CPU's cache). Blocks are aligned to the chunk's offset in its file, so a block may span two
/// pieces; the first and last blocks of the chunk may be partial.
class ZeroRunFinder {
public:
    /// `fileOffset`: where the chunk's first byte is in its file. Clears `runs`, which then
    /// receives the chunk's zero runs in order, adjacent runs merged.
    ZeroRunFinder(uint64_t fileOffset, std::vector<ByteRun>& runs);
    /// The chunk's next bytes.
    void feed(std::span<const std::byte> bytes);
    /// The chunk ends: its last (partial) block is judged.
    void finish();

private:
    void endBlock();

    std::vector<ByteRun>& runs_;
    uint64_t at_ = 0;         ///< chunk bytes fed so far
    uint64_t blockStart_ = 0; ///< where the current block starts in the chunk
    uint64_t blockEnd_ = 0;   ///< where it ends in the chunk
    bool blockZero_ = true;   ///< its bytes fed so far are all zero
};

} // namespace content
