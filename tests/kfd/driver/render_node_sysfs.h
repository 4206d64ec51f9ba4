#pragma once
/// \file
/// What /sys/dev/char/226:MINOR shows of a render node of the driver (drmSysfsPath), made when
/// the machine starts, as the kernel's sysfs shows a device before anyone opens it: libdrm's
/// drmGetDevices2 (Mesa's RADV enumerating its GPUs) finds a DRM device by it without opening it.

#include <cstdint>
#include <string>

namespace kfddriver {

/// The device of a render node as sysfs describes it.
struct RenderNodeSysfs {
    int minor = 128;
    uint32_t pciDomain = 0;
    uint32_t pciLocation = 0; ///< bus << 8 | device << 3 | function (KFD's location_id)
    uint32_t deviceId = 0;
};

/// Makes DRM_MAJOR:MINOR/device under drmSysfsPath(root): drm/cardN and drm/renderDM (the
/// device's nodes), the link subsystem (to a "pci" bus), the PCI ids (vendor 0x1002, device,
/// subsystem ids, revision) and uevent (DRIVER, PCI_SLOT_NAME). 0 or -errno.
int describeRenderNode(const std::string& root, const RenderNodeSysfs& node);

} // namespace kfddriver
