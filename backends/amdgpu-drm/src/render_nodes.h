#pragma once
/// \file
/// Finding render nodes and what sysfs says about them (`/sys/class/drm/renderD*/device`),
/// read through topology::sysfs::Dir: the real file system, or a tree held in memory (the fuzz
/// target render_topology_memory).

#include "amdgpu-drm/paths.h"

#include "topology/sysfs_tree.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drm {

/// A PCI location "DDDD:BB:DD.F".
struct PciLocation {
    uint32_t domain = 0;
    uint32_t bus = 0;
    uint32_t device = 0;
    uint32_t function = 0;
    /// KFD's location_id: bus << 8 | device << 3 | function.
    uint32_t locationId() const { return bus << 8 | device << 3 | function; }
};

/// Parses "0000:03:00.0"; nullopt when it is not a PCI location.
std::optional<PciLocation> parsePciLocation(const std::string& text);

/// What sysfs tells about one render node; fields are empty when sysfs lacks them.
struct RenderNodeSysfs {
    unsigned minor = 0;
    std::string driver; ///< basename of device/driver, "" when unknown
    std::optional<uint32_t> vendorId;
    std::optional<uint32_t> deviceId;
    std::optional<PciLocation> pci;
};

/// Minors of the `renderD<N>` entries of `devRoot/dri` in `files`, ascending (empty when none).
std::vector<unsigned> listRenderMinors(const topology::sysfs::Dir& files, const Paths& paths);

/// Reads `sysRoot/class/drm/renderD<minor>/device/{driver,vendor,device}` and the PCI location
/// (the name `device` links to, else the name it resolves to) from `files`.
RenderNodeSysfs readRenderNodeSysfs(const topology::sysfs::Dir& files, const Paths& paths,
                                    unsigned minor);

} // namespace drm
