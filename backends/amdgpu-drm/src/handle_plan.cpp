#include "handle_plan.h"

#include <map>

namespace drm {

base::Result<std::vector<std::optional<uint32_t>>> planNumbers(const std::vector<uint32_t>& numbers,
                                                               const NumberedKind& kind,
                                                               const std::string& imageName) {
    const char* image = imageName.c_str();
    if (numbers.size() > kind.maxObjects)
        return base::makeError(base::ErrorCode::Image,
                               "%s holds %zu %ss (%s), more than the %u a restore makes in one "
                               "file",
                               image, numbers.size(), kind.object, kind.field, kind.maxObjects);
    std::map<uint32_t, uint32_t> byNumber; // number -> index
    for (uint32_t i = 0; i < numbers.size(); ++i) {
        uint32_t number = numbers[i];
        if (number == 0)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: %s %u has %s 0, which the kernel never hands out "
                                   "(%s start at 1)",
                                   image, kind.object, i, kind.number, kind.plural);
        if (number > kind.highest)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: %s %u has %s %u, above the highest the kernel hands out "
                                   "(%u)",
                                   image, kind.object, i, kind.number, number, kind.highest);
        auto [it, fresh] = byNumber.emplace(number, i);
        if (!fresh)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: %s %u has %s %u, which %s %u has already", image,
                                   kind.object, i, kind.number, number, kind.object, it->second);
    }
    if (byNumber.empty())
        return std::vector<std::optional<uint32_t>>();
    auto [highest, highestIndex] = *byNumber.rbegin();
    uint32_t gaps = highest - static_cast<uint32_t>(byNumber.size());
    if (gaps > kind.maxGaps)
        return base::makeError(base::ErrorCode::Image,
                               "%s: %s %u has %s %u, which leaves %u %s below it unused: "
                               "restoring it at that number would take more than the %u %s a "
                               "restore makes",
                               image, kind.object, highestIndex, kind.number, highest, gaps,
                               kind.plural, kind.maxGaps, kind.fillers);
    std::vector<std::optional<uint32_t>> table(highest);
    for (const auto& [number, index] : byNumber)
        table[number - 1] = index;
    return table;
}

base::Result<std::vector<HandleSlot>> planHandles(const std::vector<formats::DrmBoEntry>& bos,
                                                  const std::vector<BoShare>& shares,
                                                  const std::string& imageName) {
    static constexpr NumberedKind kGemHandles{
        "bo_entries",      "BO",           "GEM handle",     "handles", "placeholder BOs",
        kHighestGemHandle, kMaxHandleGaps, kHighestGemHandle};
    std::vector<uint32_t> handles;
    for (const formats::DrmBoEntry& bo : bos)
        handles.push_back(bo.handle);
    HAL_TRY_ASSIGN(auto table, planNumbers(handles, kGemHandles, imageName));
    std::vector<HandleSlot> plan(table.size());
    for (uint32_t h = 1; h <= table.size(); ++h) {
        HandleSlot& slot = plan[h - 1];
        slot.handle = h;
        if (!table[h - 1])
            continue;
        slot.bo = *table[h - 1];
        slot.use = shares[slot.bo].follower ? HandleUse::Import : HandleUse::Create;
    }
    return plan;
}

} // namespace drm
