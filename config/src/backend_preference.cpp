#include "config/config.h"

namespace config {

std::vector<std::string> backendPreference(const Settings& settings) {
    if (!settings.backends.empty())
        return settings.backends;
    // Naming a mock root asks for the mock backend; otherwise it is never chosen unasked.
    if (!settings.mockRoot.empty())
        return {"mock", "kfd", "amdgpu-drm"};
    return {"kfd", "amdgpu-drm"};
}

} // namespace config
