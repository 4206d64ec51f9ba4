#pragma once
/// \file
/// Asking the kernel to fetch an image ahead of its reader (POSIX_FADV_WILLNEED). Content images
/// are read once, front to back, and at a restore on another machine they come cold from
/// storage: the kernel's own read-ahead (even doubled by POSIX_FADV_SEQUENTIAL) keeps too little
/// in flight to reach the device's speed. A reader that keeps the next tens of MiB requested
/// reads much faster, without O_DIRECT's alignment rules (an image's 8-byte size header puts
/// every content byte off alignment). What is fetched lands in the page cache, which the kernel
/// may reclaim: it adds nothing to the process's memory. Packed files, read whole frame by whole
/// frame, are read past the page cache instead where they can be (formats/src/direct_stream.h):
/// on a fast disk the page cache's own work is then what a restore waits on.

#include <cstdint>
#include <optional>

namespace content {

/// How far ahead of the reader the kernel is asked to have fetched.
inline constexpr uint64_t kReadAheadWindow = 32ull << 20;
/// How much more is asked for at a time, once the reader has come that close.
inline constexpr uint64_t kReadAheadStep = 8ull << 20;

/// The most one POSIX_FADV_WILLNEED call asks for. Linux fetches at most the larger of the
/// device's largest request and the file's read-ahead size per call (mm/readahead.c,
/// force_page_cache_ra) and quietly drops the rest of a longer range: on common disks that is
/// 128 KiB to 4 MiB (16 MiB on this project's machines), so a window asked for in one call was
/// fetched only that far. 128 KiB is the floor of both sizes on common devices.
inline constexpr uint64_t kReadAheadPiece = 128ull << 10;

/// A byte range of a file.
struct FileRange {
    uint64_t offset = 0;
    uint64_t length = 0;
};

/// Asks the kernel to fetch `range` of file `fd` (POSIX_FADV_WILLNEED), in pieces of
/// kReadAheadPiece so that none of it is dropped. A hint: it starts the reads and waits for none.
void fetchAhead(int fd, FileRange range);

/// What a reader at `offset` of a file of `size` bytes asks to be fetched next, having asked for
/// everything before `askedUpTo`: nothing while kReadAheadWindow ahead of it has been asked for
/// (or the file ends sooner), else from where it asked up to (or from `offset`, when it is past
/// that) to kReadAheadWindow + kReadAheadStep ahead, never past the end.
std::optional<FileRange> nextReadAhead(uint64_t offset, uint64_t askedUpTo, uint64_t size);

} // namespace content
