#include "bo_shares.h"

#include <algorithm>

namespace drm {

base::Result<std::vector<BoShare>> sharesOf(const formats::RenderNodeImage& image,
                                            const std::string& imageName) {
    if (!image.privData.empty())
        return base::makeError(base::ErrorCode::Image,
                               "%s carries %zu bytes of priv_data, which render-node images of "
                               "this backend never hold: it was written by another backend (the "
                               "mock GPU's?) or by a development build that kept BO sharing there; "
                               "restoring it would lose which BOs share memory",
                               imageName.c_str(), image.privData.size());
    const auto& bos = image.bos;
    std::vector<BoShare> out(bos.size());
    size_t withFacts = static_cast<size_t>(
        std::count_if(bos.begin(), bos.end(),
                      [](const formats::DrmBoEntry& bo) { return bo.sharing.has_value(); }));
    if (withFacts == 0) {
        for (size_t i = 0; i < bos.size(); ++i)
            out[i] = BoShare{kHandleShareKeyTag | bos[i].handle, bos[i].isImport};
        return out;
    }
    for (size_t i = 0; i < bos.size(); ++i) {
        if (!bos[i].sharing)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: BO %zu (handle %u) has no share_key although %zu other BOs "
                                   "of the image have one",
                                   imageName.c_str(), i, bos[i].handle, withFacts);
        out[i] = *bos[i].sharing;
        if (out[i].follower && out[i].key == 0)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: BO %zu (handle %u) is to be imported but has no share key",
                                   imageName.c_str(), i, bos[i].handle);
    }
    return out;
}

} // namespace drm
