#pragma once
/// \file
/// Synthetic topologies of real shapes, and their image bytes, for seeds.

#include "topology/topology.h"

#include <string>
#include <vector>

namespace fuzzsupport {

/// How large the seed machines are.
enum class SeedSize {
    RealShapes, ///< as makeSyntheticTopology builds them (a GPU node has about thirty caches)
    /// The same kinds of node, file and link in a few KB: at most two caches per node, and the
    /// hive machine with four GPUs instead of eight. For the readers of whole sysfs trees, whose
    /// executions per second follow the size of the inputs (tests/fuzz/README.md): thirty caches
    /// whose files differ only in their numbers are the same parsing thirty times over.
    Compact,
};

/// One GPU; four GPUs on two NUMA nodes; eight (Compact: four) GPUs in two XGMI hives; a GPU of
/// another model.
std::vector<topology::Topology> seedTopologies(SeedSize size = SeedSize::RealShapes);

/// The bytes of `amdgpu-topology.img` for `topology` (formats::writeTopologyImage).
std::string topologyImageBytes(const topology::Topology& topology);

} // namespace fuzzsupport
