#include "content/file_holes.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace content {

FileSpan HoleCursor::at(uint64_t offset) {
    if (allData_)
        return {false, size_};
    if (offset >= from_ && offset < to_)
        return {hole_, to_};
    from_ = offset;
    off_t data = lseek(fd_, static_cast<off_t>(offset), SEEK_DATA);
    if (data < 0) {
        // ENXIO: no data from here to the end. Anything else: no SEEK_DATA here.
        allData_ = errno != ENXIO;
        hole_ = !allData_;
        to_ = size_;
        return {hole_, to_};
    }
    if (static_cast<uint64_t>(data) > offset) {
        hole_ = true;
        to_ = std::min<uint64_t>(static_cast<uint64_t>(data), size_);
        return {true, to_};
    }
    off_t hole = lseek(fd_, static_cast<off_t>(offset), SEEK_HOLE);
    hole_ = false;
    to_ = hole > static_cast<off_t>(offset) ? std::min<uint64_t>(static_cast<uint64_t>(hole), size_)
                                            : size_;
    return {false, to_};
}

std::vector<FileRange> dataRanges(HoleCursor& cursor, FileRange range) {
    std::vector<FileRange> out;
    uint64_t end = range.offset + range.length;
    for (uint64_t at = range.offset; at < end;) {
        FileSpan span = cursor.at(at);
        uint64_t to = std::min(span.end, end);
        if (to <= at)
            break;
        if (!span.hole) {
            if (!out.empty() && out.back().offset + out.back().length == at)
                out.back().length += to - at;
            else
                out.push_back({at, to - at});
        }
        at = to;
    }
    return out;
}

} // namespace content
