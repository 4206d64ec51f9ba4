#include "amdgpu-drm/paths.h"

#include "topology/sysfs.h"

#include <cstdlib>

namespace drm {

std::string Paths::renderNodePath(unsigned minor) const {
    return devRoot + "/dri/renderD" + std::to_string(minor);
}

std::string Paths::kfdRoot() const {
    return kfdTopologyRoot.empty() ? std::string(topology::kKfdSysfsTopologyRoot) : kfdTopologyRoot;
}

Paths Paths::fromSettings(const settings::Settings& settings) {
    Paths p;
    if (!settings.devRoot.empty())
        p.devRoot = settings.devRoot;
    p.kfdTopologyRoot = settings.kfdSysfsRoot;
    return p;
}

int renderMinorOfPath(const std::string& path) {
    static const std::string kPrefix = "renderD";
    size_t slash = path.rfind('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.compare(0, kPrefix.size(), kPrefix) != 0 || base.size() == kPrefix.size() ||
        base.size() > kPrefix.size() + 3)
        return -1;
    int minor = 0;
    for (size_t i = kPrefix.size(); i < base.size(); ++i) {
        if (base[i] < '0' || base[i] > '9')
            return -1;
        minor = minor * 10 + (base[i] - '0');
    }
    return minor;
}

} // namespace drm
