#pragma once
// The matcher's internal model: each side's GPUs as positions with adjacency bitsets, the
// per-GPU compatibility rules, the constraint search and the diagnostics built on it.

#include "config/settings.h"
#include "gpu_set.h"
#include "hal/topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hal::match {

/// A GPU's link to a CPU (non-GPU) node.
struct CpuLink {
    int cpu = 0;        ///< position in Side::cpus
    bool xgmi = false;  ///< link type 11 (else PCIe)
    bool bidir = false; ///< the CPU node has a link back
    bool operator==(const CpuLink&) const = default;
};

/// One machine as the matcher sees it. Only io_links of type 2 (PCIe) and 11 (XGMI) to nodes
/// that are present count; GPU-GPU PCIe links matter only as the reverse half of a link.
struct Side {
    std::vector<const Node*> gpus;
    std::vector<const Node*> cpus; ///< non-GPU nodes that GPUs link to
    std::vector<GpuSet> xgmiOut;   ///< per GPU: GPUs it has an XGMI link to
    std::vector<GpuSet> xgmiIn;    ///< per GPU: GPUs with an XGMI link to it
    std::vector<GpuSet> anyOut;    ///< per GPU: GPUs it has a kept link (2 or 11) to
    std::vector<GpuSet> anyIn;     ///< per GPU: GPUs with a kept link to it
    std::vector<std::vector<CpuLink>> cpuLinks; ///< per GPU
    /// [cpu][kind]: GPUs with a link to the CPU that satisfies a source link of this kind
    /// (kind bit 0: must be XGMI, bit 1: must be bidirectional).
    std::vector<std::vector<GpuSet>> gpusServing;
};

/// Builds a Side from a topology.
Side buildSide(const Topology& topo);

/// Properties that must be equal on both sides (reference-amdgpu-plugin.md; not io_links_count).
const std::vector<std::string>& equalProperties();
/// vram_public: the GPU has a public frame-buffer bank.
bool vramPublic(const Node& node);

/// The values the per-GPU rules compare, read once per GPU.
struct UnaryProfile {
    std::vector<uint64_t> equal; ///< equalProperties() values in order
    uint64_t capability = 0, vram = 0, numGws = 0, caches = 0, fw = 0, sdmaFw = 0;
};
/// The profile of a GPU node.
UnaryProfile unaryProfile(const Node& node);
/// unaryCompatible on precomputed profiles.
bool unaryCompatible(const UnaryProfile& src, const UnaryProfile& dst,
                     const config::CompatibilityChecks& checks);

/// True when dst can stand in for src on its own (equal properties and enabled checks).
bool unaryCompatible(const Node& src, const Node& dst, const config::CompatibilityChecks& checks);
/// Why no candidate can stand in for src: the first rule that eliminates the last candidate,
/// with the values and the option that relaxes it. Empty when some candidate passes.
std::string explainUnary(const Node& src, const std::vector<const Node*>& candidates,
                         const config::CompatibilityChecks& checks);
/// Every rule that dst violates for src, one line each (for warnings about forced entries).
std::vector<std::string> unaryViolations(const Node& src, const Node& dst,
                                         const config::CompatibilityChecks& checks);

/// The constraint problem: map every active source GPU onto a distinct destination GPU.
struct Problem {
    const Side* src = nullptr;
    const Side* dst = nullptr;
    std::vector<GpuSet> domain; ///< per source GPU: allowed destination GPUs
    std::vector<int> forced;    ///< per source GPU: forced destination position, or -1
    std::vector<bool> active;   ///< per source GPU: part of this problem
    bool numa = true;           ///< enforce the CPU-node grouping
    bool xgmi = true;           ///< enforce XGMI/bidirectional link preservation
};

/// Outcome of the search.
struct Solution {
    bool found = false;
    std::vector<int> assignment; ///< per source GPU: destination position or -1
    uint64_t nodes = 0;          ///< search nodes visited (for tests and benchmarks)
    std::vector<std::string> warnings; ///< forced entries whose CPU grouping could not be kept
};

/// Complete search: finds an assignment whenever one exists.
Solution solve(const Problem& problem);

/// A source GPU for messages: "source GPU 0x1234 (node 2)".
std::string describeSrc(const Node& node);
/// A destination GPU for messages: "destination GPU 0x1234 (node 2, renderD130)".
std::string describeDst(const Node& node);

/// Why a problem whose GPUs each have candidates has no solution (Hall violations, XGMI hives,
/// NUMA grouping), one reason per line.
std::vector<std::string> explainNoSolution(const Problem& problem);

} // namespace hal::match
