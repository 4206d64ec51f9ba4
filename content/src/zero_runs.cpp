#include "content/zero_runs.h"

#include <algorithm>
#include <cstring>

namespace content {

bool isAllZero(std::span<const std::byte> bytes) {
    const std::byte* p = bytes.data();
    size_t n = bytes.size();
    // A block of data usually shows a byte that is not zero among its first words.
    constexpr size_t kLine = 64;
    while (n >= kLine) {
        uint64_t w[kLine / sizeof(uint64_t)];
        memcpy(w, p, kLine);
        uint64_t any = 0;
        for (uint64_t v : w)
            any |= v;
        if (any)
            return false;
        p += kLine;
        n -= kLine;
    }
    for (; n; --n, ++p)
        if (*p != std::byte{0})
            return false;
    return true;
}

ZeroRunFinder::ZeroRunFinder(uint64_t fileOffset, std::vector<ByteRun>& runs) : runs_(runs) {
    runs_.clear();
    blockEnd_ = kHoleBlock - fileOffset % kHoleBlock;
}

void ZeroRunFinder::feed(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        size_t take = static_cast<size_t>(std::min<uint64_t>(bytes.size(), blockEnd_ - at_));
        if (blockZero_)
            blockZero_ = isAllZero(bytes.first(take));
        at_ += take;
        bytes = bytes.subspan(take);
        if (at_ == blockEnd_)
            endBlock();
    }
}

void ZeroRunFinder::finish() {
    if (at_ > blockStart_)
        endBlock();
}

void ZeroRunFinder::endBlock() {
    if (blockZero_) {
        if (!runs_.empty() && runs_.back().offset + runs_.back().length == blockStart_)
            runs_.back().length += at_ - blockStart_;
        else
            runs_.push_back({blockStart_, at_ - blockStart_});
    }
    blockStart_ = at_;
    blockEnd_ = at_ + kHoleBlock;
    blockZero_ = true;
}

} // namespace content
