#include "render_nodes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace drm {

std::optional<PciLocation> parsePciLocation(const std::string& text) {
    PciLocation loc;
    int used = -1;
    if (text.size() != 12 ||
        sscanf(text.c_str(), "%4x:%2x:%2x.%1x%n", &loc.domain, &loc.bus, &loc.device, &loc.function,
               &used) != 4 ||
        used != 12)
        return std::nullopt;
    return loc;
}

std::vector<unsigned> listRenderMinors(const topology::sysfs::Dir& files, const Paths& paths) {
    std::vector<unsigned> out;
    std::string dri = paths.devRoot + "/dri";
    int err = 0;
    std::unique_ptr<topology::sysfs::Dir> dir = files.openDir(dri.c_str(), &err);
    if (!dir)
        return out;
    for (const std::string& name : dir->entryNames(&err)) {
        int minor = renderMinorOfPath(name);
        if (minor >= 0)
            out.push_back(static_cast<unsigned>(minor));
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

// The first word of a sysfs attribute, read as hex ("0x1002\n").
std::optional<uint32_t> readHex(const topology::sysfs::Dir& device, const char* name) {
    std::string text;
    if (device.readFile(name, &text) != 0)
        return std::nullopt;
    size_t start = text.find_first_not_of(" \t\n\r\f\v");
    if (start == std::string::npos)
        return std::nullopt;
    std::string word = text.substr(start, text.find_first_of(" \t\n\r\f\v", start) - start);
    char* end = nullptr;
    unsigned long v = strtoul(word.c_str(), &end, 16);
    if (end == word.c_str())
        return std::nullopt;
    return static_cast<uint32_t>(v);
}

std::string lastComponent(const std::string& path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

RenderNodeSysfs readRenderNodeSysfs(const topology::sysfs::Dir& files, const Paths& paths,
                                    unsigned minor) {
    RenderNodeSysfs out;
    out.minor = minor;
    std::string node = paths.sysRoot + "/class/drm/renderD" + std::to_string(minor);
    int err = 0;
    std::unique_ptr<topology::sysfs::Dir> dir = files.openDir(node.c_str(), &err);
    if (!dir)
        return out;
    std::string text;
    if (dir->readLink("device/driver", &text) == 0)
        out.driver = lastComponent(text);
    out.vendorId = readHex(*dir, "device/vendor");
    out.deviceId = readHex(*dir, "device/device");
    if (dir->readLink("device", &text) == 0)
        out.pci = parsePciLocation(lastComponent(text));
    if (!out.pci && dir->resolvedName("device", &text) == 0)
        out.pci = parsePciLocation(text);
    return out;
}

} // namespace drm
