#include "render_node_sysfs.h"

#include "render_node_protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kfddriver {

namespace {

int writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.flush();
    return out ? 0 : -EIO;
}

std::string hex(uint32_t value, int digits) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%0*x", digits, value);
    return buf;
}

} // namespace

int describeRenderNode(const std::string& root, const RenderNodeSysfs& node) {
    std::string device = drmSysfsPath(root) + "/226:" + std::to_string(node.minor) + "/device";
    std::error_code error;
    for (const std::string& name :
         {"card" + std::to_string(node.minor - 128), "renderD" + std::to_string(node.minor)})
        if (!std::filesystem::create_directories(device + "/drm/" + name, error) && error)
            return -error.value();
    // The link's target is the bus's folder in the real tree; libdrm reads only its last name.
    std::string link = device + "/subsystem";
    ::unlink(link.c_str());
    if (symlink("../../../bus/pci", link.c_str()) != 0)
        return -errno;
    char slot[32];
    snprintf(slot, sizeof slot, "%04x:%02x:%02x.%x", node.pciDomain, node.pciLocation >> 8,
             (node.pciLocation >> 3) & 0x1f, node.pciLocation & 7);
    const std::pair<const char*, std::string> files[] = {
        {"vendor", hex(0x1002, 4) + "\n"},
        {"device", hex(node.deviceId, 4) + "\n"},
        {"subsystem_vendor", hex(0x1002, 4) + "\n"},
        {"subsystem_device", hex(0x0c34, 4) + "\n"},
        {"revision", hex(0, 2) + "\n"},
        {"uevent", std::string("DRIVER=amdgpu\nPCI_SLOT_NAME=") + slot + "\n"},
    };
    for (const auto& [name, text] : files)
        if (int e = writeFile(device + "/" + name, text); e < 0)
            return e;
    return 0;
}

} // namespace kfddriver
