#include "render_nodes.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace drm {
namespace fs = std::filesystem;

std::optional<PciLocation> parsePciLocation(const std::string& text) {
    PciLocation loc;
    int used = -1;
    if (text.size() != 12 || sscanf(text.c_str(), "%4x:%2x:%2x.%1x%n", &loc.domain, &loc.bus,
                                    &loc.device, &loc.function, &used) != 4 ||
        used != 12)
        return std::nullopt;
    return loc;
}

std::vector<unsigned> listRenderMinors(const Paths& paths) {
    std::vector<unsigned> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(paths.devRoot + "/dri", ec)) {
        int minor = renderMinorOfPath(entry.path().filename().string());
        if (minor >= 0)
            out.push_back(static_cast<unsigned>(minor));
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

std::optional<uint32_t> readHex(const fs::path& file) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text))
        return std::nullopt;
    char* end = nullptr;
    unsigned long v = strtoul(text.c_str(), &end, 16);
    if (end == text.c_str())
        return std::nullopt;
    return static_cast<uint32_t>(v);
}

} // namespace

RenderNodeSysfs readRenderNodeSysfs(const Paths& paths, unsigned minor) {
    RenderNodeSysfs out;
    out.minor = minor;
    fs::path device = fs::path(paths.sysRoot) / "class/drm" / ("renderD" + std::to_string(minor)) /
                      "device";
    std::error_code ec;
    fs::path driver = fs::read_symlink(device / "driver", ec);
    if (!ec)
        out.driver = driver.filename().string();
    out.vendorId = readHex(device / "vendor");
    out.deviceId = readHex(device / "device");
    fs::path target = fs::read_symlink(device, ec);
    if (!ec)
        out.pci = parsePciLocation(target.filename().string());
    if (!out.pci) {
        fs::path canonical = fs::canonical(device, ec);
        if (!ec)
            out.pci = parsePciLocation(canonical.filename().string());
    }
    return out;
}

} // namespace drm
