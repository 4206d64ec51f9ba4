#include "content/read_ahead.h"

#include <fcntl.h>

#include <algorithm>
#include <limits>

namespace content {
namespace {

/// `a + b`, or the largest value when that would wrap.
uint64_t addClamped(uint64_t a, uint64_t b) {
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                        : a + b;
}

} // namespace

std::optional<FileRange> nextReadAhead(uint64_t offset, uint64_t askedUpTo, uint64_t size) {
    uint64_t wanted = std::min(size, addClamped(offset, kReadAheadWindow));
    if (askedUpTo >= wanted)
        return std::nullopt;
    uint64_t from = std::max(askedUpTo, offset);
    uint64_t to = std::min(size, addClamped(offset, kReadAheadWindow + kReadAheadStep));
    return FileRange{from, to - from};
}

void fetchAhead(int fd, FileRange range) {
    for (uint64_t at = 0; at < range.length; at += kReadAheadPiece)
        posix_fadvise(fd, static_cast<off_t>(range.offset + at),
                      static_cast<off_t>(std::min(kReadAheadPiece, range.length - at)),
                      POSIX_FADV_WILLNEED);
}

} // namespace content
