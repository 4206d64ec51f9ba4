#pragma once
/// \file
/// Where a file's holes are (lseek SEEK_DATA / SEEK_HOLE), learnt as a reader goes: content
/// images leave runs of zeros out as holes (content/zero_runs.h), and a reader fills zeros for them
/// instead of reading them, and asks no read-ahead for them. A file system without holes, or
/// without SEEK_DATA, reports the whole file as data.

#include "content/read_ahead.h"

#include <cstdint>
#include <vector>

namespace content {

/// What lies at an offset: data or a hole, up to `end`.
struct FileSpan {
    bool hole = false;
    uint64_t end = 0;
};

/// Answers what lies at an offset of an open file of `size` bytes, keeping the last span it
/// learnt, so a reader going front to back asks the kernel twice per span. It moves the file's
/// offset (readers use pread). The fd is borrowed.
class HoleCursor {
public:
    HoleCursor(int fd, uint64_t size) : fd_(fd), size_(size) {}
    /// The span holding `offset` (< the size).
    FileSpan at(uint64_t offset);

private:
    int fd_;
    uint64_t size_;
    uint64_t from_ = 0, to_ = 0; ///< the span learnt last: [from_, to_)
    bool hole_ = false;
    bool allData_ = false; ///< SEEK_DATA is not supported: everything is data
};

/// The parts of `range` that are data, in order.
std::vector<FileRange> dataRanges(HoleCursor& cursor, FileRange range);

} // namespace content
