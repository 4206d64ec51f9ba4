#pragma once
/// \file
/// Reading and writing KFD sysfs topology trees (`/sys/class/kfd/kfd/topology` or any root).

#include "base/result.h"
#include "topology/sysfs_tree.h"
#include "topology/topology.h"

#include <string>

namespace topology {

using base::Result;

/// The KFD topology root on a real machine.
inline constexpr const char* kKfdSysfsTopologyRoot = "/sys/class/kfd/kfd/topology";

/// Reads the tree under `root` (which holds `nodes/`). Nodes whose files cannot be read are
/// skipped and listed in Topology::skipped, never counted as CPUs. Fails when `root/nodes` is
/// missing or no node at all can be read.
Result<Topology> readKfdTopology(const std::string& root);
/// The same reading, of the tree `root` names relative to `base` (sysfs::realFileSystem() for the
/// real tree, a sysfs::MemoryTree's root for one held in memory). Messages name `root`.
Result<Topology> readKfdTopology(const sysfs::Dir& base, const std::string& root);

/// Writes `topology` as a KFD sysfs tree under `root` (nodes/N/{gpu_id,name,properties,
/// mem_banks,caches,io_links,p2p_links}); used to generate fixtures and mock machines.
Result<void> writeKfdTopology(const Topology& topology, const std::string& root);

} // namespace topology
