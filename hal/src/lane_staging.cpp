// How much staging a lane of BO contents takes of its share (hal/bo_contents.h).
#include "hal/bo_contents.h"

#include <algorithm>
#include <vector>

namespace hal {

namespace {

constexpr uint64_t kPage = 4096;

} // namespace

uint64_t laneStagingBytes(uint64_t share, std::span<const uint64_t> sizes, bool pagesFile) {
    // Whole incremental chunks per slot: a smaller lane records the chunks a full share's would
    // (datapath/image_increment.h), so a parent and its child dump agree on them.
    const uint64_t unit = kLaneSlots * formats::kDefaultIncrementChunk;
    uint64_t bytes = 0;
    uint64_t fitted = 0;
    for (uint64_t size : sizes)
        if (__builtin_add_overflow(bytes, size, &bytes) || bytes >= share) {
            fitted = share; // the lane fills its whole share
            break;
        }
    if (!fitted)
        fitted = std::min(share, std::max<uint64_t>((bytes + unit - 1) / unit * unit, unit));
    if (pagesFile) {
        uint64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
        uint64_t slot = (largest / kPagesSlotsPerLargestBo + kPage - 1) / kPage * kPage;
        fitted = std::min(fitted, std::max(slot, kMinPagesSlot) * kLaneSlots);
    }
    return std::max<uint64_t>(fitted, kLaneSlots * kPage);
}

uint64_t laneStagingBytesOf(uint64_t share, const ContentsLane& lane, bool pagesFile) {
    std::vector<uint64_t> sizes;
    sizes.reserve(lane.bos.size());
    for (const BoContents& bo : lane.bos)
        sizes.push_back(bo.size);
    return laneStagingBytes(share, sizes, pagesFile);
}

} // namespace hal
