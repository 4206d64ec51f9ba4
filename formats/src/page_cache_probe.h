#pragma once
/// \file
/// How much of a file is in the page cache, at a cost that does not grow with the file: its
/// size comes from a checkpoint and may be anything (a sparse file of terabytes costs nothing to
/// make). cachestat (Linux 6.5 on) answers in one call; before it, mincore looks at a fixed
/// sample: kProbeWindows windows of kProbeWindowPages pages spread evenly over the file, each
/// mapped on its own (at most 16 x 2,048 pages: 128 MiB of 4 KiB pages looked at per file).

#include <cstdint>

namespace formats {

constexpr uint64_t kProbeWindows = 16;
constexpr uint64_t kProbeWindowPages = 2048;

/// Pages of a file found in the page cache out of pages looked at.
struct CachedShare {
    uint64_t cached = 0;
    uint64_t looked = 0;
};

/// The share of file `fd` (`size` bytes) in the page cache; looked == 0 when nothing can say.
CachedShare cachedShare(int fd, uint64_t size);

/// Tests only: when set, cachedShare does not try cachestat (as on a kernel before 6.5).
extern bool pageCacheProbeWithoutCachestat;

} // namespace formats
