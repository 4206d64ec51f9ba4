#include "bo_shares.h"

#include <sstream>

namespace drm {

namespace {
const char* const kMagic = "amdgpu-drm-shares";
constexpr int kVersion = 1;
} // namespace

std::string encodeShares(const std::vector<BoShare>& shares) {
    std::ostringstream out;
    out << kMagic << ' ' << kVersion << ' ' << shares.size() << '\n';
    for (const BoShare& s : shares)
        out << std::hex << s.key << std::dec << ' ' << (s.follower ? 'f' : 'o') << '\n';
    return out.str();
}

hal::Result<std::vector<BoShare>> decodeShares(const std::string& privData,
                                               const std::vector<hal::DrmBoEntry>& bos,
                                               const std::string& imageName) {
    std::vector<BoShare> out(bos.size());
    if (privData.empty()) {
        for (size_t i = 0; i < bos.size(); ++i)
            out[i] = BoShare{kHandleShareKeyTag | bos[i].handle, bos[i].isImport};
        return out;
    }
    std::istringstream in(privData);
    std::string magic;
    int version = 0;
    size_t count = 0;
    if (!(in >> magic >> version >> count) || magic != kMagic)
        return hal::makeError(hal::ErrorCode::Image, "%s: unreadable BO sharing section",
                              imageName.c_str());
    if (version != kVersion)
        return hal::makeError(hal::ErrorCode::Image,
                              "%s: BO sharing section version %d, this backend reads %d",
                              imageName.c_str(), version, kVersion);
    if (count != bos.size())
        return hal::makeError(hal::ErrorCode::Image,
                              "%s: BO sharing section lists %zu BOs but the image holds %zu",
                              imageName.c_str(), count, bos.size());
    for (size_t i = 0; i < count; ++i) {
        char role = 0;
        if (!(in >> std::hex >> out[i].key >> std::dec >> role) || (role != 'o' && role != 'f'))
            return hal::makeError(hal::ErrorCode::Image, "%s: BO sharing entry %zu is malformed",
                                  imageName.c_str(), i);
        out[i].follower = role == 'f';
        if (out[i].follower && out[i].key == 0)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s: BO %zu is to be imported but has no share key",
                                  imageName.c_str(), i);
    }
    return out;
}

} // namespace drm
