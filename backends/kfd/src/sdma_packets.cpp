#include "kfd/sdma_packets.h"

#include <algorithm>

namespace kfd {

void appendSdmaCopy(std::vector<uint32_t>& ib, uint64_t src, uint64_t dst, uint64_t bytes) {
    while (bytes > 0) {
        uint64_t n = std::min(bytes, kSdmaMaxCopyBytes);
        ib.push_back(sdmaHeader(kSdmaOpCopy, kSdmaSubOpCopyLinear));
        ib.push_back(static_cast<uint32_t>(n - 1) & kSdmaCountMask);
        ib.push_back(0);
        ib.push_back(static_cast<uint32_t>(src));
        ib.push_back(static_cast<uint32_t>(src >> 32));
        ib.push_back(static_cast<uint32_t>(dst));
        ib.push_back(static_cast<uint32_t>(dst >> 32));
        src += n;
        dst += n;
        bytes -= n;
    }
}

void padSdmaIb(std::vector<uint32_t>& ib) {
    while (ib.size() % kSdmaIbAlignDwords)
        ib.push_back(sdmaHeader(kSdmaOpNop, 0));
}

uint32_t sdmaIbDwordsFor(uint64_t bytes) {
    uint64_t packets = std::max<uint64_t>(1, (bytes + kSdmaMaxCopyBytes - 1) / kSdmaMaxCopyBytes);
    uint64_t dw = packets * kSdmaCopyPacketDwords;
    return static_cast<uint32_t>((dw + kSdmaIbAlignDwords - 1) / kSdmaIbAlignDwords *
                                 kSdmaIbAlignDwords);
}

} // namespace kfd
