// The page-cache probe (page_cache_probe.h): cachestat, else mincore over a fixed sample.
#include "page_cache_probe.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace formats {

bool pageCacheProbeWithoutCachestat = false;

namespace {

/// cachestat(2) over the whole file; false when the kernel has none.
bool cachestatShare(int fd, uint64_t pages, CachedShare& out) {
    struct {
        uint64_t offset, length;
    } range{0, 0}; // 0: to the end
    struct {
        uint64_t cache, dirty, writeback, evicted, recentlyEvicted;
    } stat{};
    constexpr long kCachestat = 451; // the same number on every architecture
    if (syscall(kCachestat, fd, &range, &stat, 0) != 0)
        return false;
    out = {stat.cache, pages};
    return true;
}

/// Cached pages among `count` pages from page `first` of `fd`, or -1 when mincore cannot say.
int64_t residentIn(int fd, uint64_t first, uint64_t count, uint64_t page,
                   std::vector<unsigned char>& resident) {
    size_t bytes = static_cast<size_t>(count * page);
    void* mapped =
        mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(first * page));
    if (mapped == MAP_FAILED)
        return -1;
    int64_t cached = -1;
    if (mincore(mapped, bytes, resident.data()) == 0)
        cached =
            std::count_if(resident.begin(), resident.begin() + static_cast<std::ptrdiff_t>(count),
                          [](unsigned char r) { return r & 1; });
    munmap(mapped, bytes);
    return cached;
}

} // namespace

CachedShare cachedShare(int fd, uint64_t size) {
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t pages = (size + page - 1) / page;
    CachedShare share;
    if (!pageCacheProbeWithoutCachestat && cachestatShare(fd, pages, share))
        return share;
    if (pages == 0)
        return share;
    // All of a small file, window after window; else windows spread evenly, the first at the
    // start of the file and the last at its end.
    uint64_t windows = std::min(kProbeWindows, (pages + kProbeWindowPages - 1) / kProbeWindowPages);
    uint64_t stride = pages <= kProbeWindows * kProbeWindowPages
                          ? kProbeWindowPages
                          : (pages - kProbeWindowPages) / (kProbeWindows - 1);
    std::vector<unsigned char> resident(kProbeWindowPages);
    for (uint64_t w = 0; w < windows; ++w) {
        uint64_t first = w * stride;
        uint64_t count = std::min(kProbeWindowPages, pages - first);
        int64_t cached = residentIn(fd, first, count, page, resident);
        if (cached < 0)
            return {};
        share.cached += static_cast<uint64_t>(cached);
        share.looked += count;
    }
    return share;
}

} // namespace formats
