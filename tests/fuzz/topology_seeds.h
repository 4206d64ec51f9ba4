#pragma once
/// \file
/// Synthetic topologies of real shapes, and their image bytes, for seeds.

#include "hal/topology.h"

#include <string>
#include <vector>

namespace fuzzsupport {

/// One GPU; four GPUs on two NUMA nodes; eight GPUs in two XGMI hives; a GPU of another model.
std::vector<hal::Topology> seedTopologies();

/// The bytes of `amdgpu-topology.img` for `topology` (hal::writeTopologyImage).
std::string topologyImageBytes(const hal::Topology& topology);

} // namespace fuzzsupport
