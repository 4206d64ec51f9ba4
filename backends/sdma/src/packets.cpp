#include "sdma/packets.h"

#include <algorithm>

namespace sdma {

std::vector<uint32_t> buildLinearCopy(uint64_t src, uint64_t dst, uint64_t bytes) {
    std::vector<uint32_t> ib;
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = std::min(kMaxCopyBytes, bytes - done);
        ib.push_back(header(kOpCopy, kSubOpCopyLinear));
        ib.push_back(static_cast<uint32_t>(n - 1) & kCountMask);
        ib.push_back(0);
        ib.push_back(static_cast<uint32_t>(src + done));
        ib.push_back(static_cast<uint32_t>((src + done) >> 32));
        ib.push_back(static_cast<uint32_t>(dst + done));
        ib.push_back(static_cast<uint32_t>((dst + done) >> 32));
        done += n;
    }
    while (ib.size() % kIbAlignDwords)
        ib.push_back(header(kOpNop, 0));
    return ib;
}

uint32_t ibDwordsFor(uint64_t bytes) {
    uint64_t packets = std::max<uint64_t>(1, (bytes + kMaxCopyBytes - 1) / kMaxCopyBytes);
    uint64_t dw = packets * kCopyPacketDwords;
    return static_cast<uint32_t>((dw + kIbAlignDwords - 1) / kIbAlignDwords * kIbAlignDwords);
}

} // namespace sdma
