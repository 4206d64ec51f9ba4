#include "formats/image_names.h"

#include "base/result.h"

namespace formats {

using base::strFormat;

std::string kfdImageName(uint32_t id) {
    return strFormat("amdgpu-kfd-%u.img", id);
}

std::string kfdPagesImageName(uint32_t id, uint32_t gpuId) {
    return strFormat("amdgpu-pages-%u-%04x.img", id, gpuId);
}

std::string kfdBoImageName(uint32_t id, uint32_t gpuId, uint32_t boIndex) {
    return strFormat("amdgpu-kfd-bo-%u-%04x-%04x.img", id, gpuId, boIndex);
}

std::string renderNodeImageName(uint32_t id) {
    return strFormat("amdgpu-renderD-%u.img", id);
}

std::string drmPagesImageName(uint32_t id, uint32_t renderMinor, uint32_t boIndex) {
    return strFormat("amdgpu-drm-pages-%u-%u-%04x.img", id, renderMinor, boIndex);
}

std::string dmabufImageName(uint32_t id) {
    return strFormat("amdgpu-dmabuf_%u.img", id);
}

std::string withOurPrefix(const std::string& name, std::string_view prefix) {
    constexpr std::string_view kOurs = "amdgpu-";
    if (name.starts_with(prefix) || !name.starts_with(kOurs))
        return name;
    return std::string(prefix) + name.substr(kOurs.size());
}

} // namespace formats
