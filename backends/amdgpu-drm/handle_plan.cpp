#include "handle_plan.h"

#include <map>

namespace drm {

hal::Result<std::vector<HandleSlot>> planHandles(const std::vector<hal::DrmBoEntry>& bos,
                                                 const std::vector<BoShare>& shares,
                                                 const std::string& imageName) {
    std::map<uint32_t, uint32_t> byHandle; // handle -> BO index
    for (uint32_t i = 0; i < bos.size(); ++i) {
        uint32_t handle = bos[i].handle;
        if (handle == 0)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s: BO %u has GEM handle 0, which the kernel never hands out "
                                  "(handles start at 1)",
                                  imageName.c_str(), i);
        if (handle > kHighestGemHandle)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s: BO %u has GEM handle %u, above the highest the kernel "
                                  "hands out (%u)",
                                  imageName.c_str(), i, handle, kHighestGemHandle);
        auto [it, fresh] = byHandle.emplace(handle, i);
        if (!fresh)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s: BO %u has GEM handle %u, which BO %u has already",
                                  imageName.c_str(), i, handle, it->second);
    }
    if (byHandle.empty())
        return std::vector<HandleSlot>();
    auto [highest, highestBo] = *byHandle.rbegin();
    uint32_t gaps = highest - static_cast<uint32_t>(byHandle.size());
    if (gaps > kMaxHandleGaps)
        return hal::makeError(hal::ErrorCode::Image,
                              "%s: BO %u has GEM handle %u, which leaves %u handles below it "
                              "unused: restoring it at that number would take more than the %u "
                              "placeholder BOs a restore makes",
                              imageName.c_str(), highestBo, highest, gaps, kMaxHandleGaps);
    std::vector<HandleSlot> plan(highest);
    for (uint32_t h = 1; h <= highest; ++h)
        plan[h - 1].handle = h;
    for (const auto& [handle, index] : byHandle) {
        HandleSlot& slot = plan[handle - 1];
        slot.bo = index;
        slot.use = shares[index].follower ? HandleUse::Import : HandleUse::Create;
    }
    return plan;
}

} // namespace drm
