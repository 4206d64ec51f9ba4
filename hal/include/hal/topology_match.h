#pragma once
/// \file
/// Mapping the GPUs of a checkpointed topology onto the GPUs of the restoring machine.

#include "config/settings.h"
#include "hal/result.h"
#include "hal/topology.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hal {

/// What the matcher may relax and what it must honour.
struct MatchOptions {
    /// Relaxable per-GPU checks and the NUMA (CPU node) grouping check.
    config::CompatibilityChecks checks;
    /// Require as many usable destination GPUs as source GPUs (default: superset allowed).
    bool exactGpuCount = false;
    /// Forced source -> destination assignments. They are applied even when they break a rule
    /// (each broken rule becomes a MatchReport::warnings line); the other GPUs are matched
    /// around them. A name that does not resolve to a usable destination GPU fails the match.
    std::vector<config::DeviceMapEntry> deviceMap;
    /// Every source GPU (except device-map entries) onto one destination GPU: the first usable
    /// GPU that passes the per-GPU checks for all of them, else the first usable GPU with a
    /// warning per broken rule. Link rules do not apply.
    bool forceSingleGpu = false;
    /// When set, only these destination gpu_ids are candidates (the GPUs the restoring process
    /// can open, e.g. one render node of eight in a container).
    std::optional<std::set<uint32_t>> usableDstGpuIds;
};

/// The options the settings ask for.
MatchOptions matchOptionsFromSettings(const config::Settings& settings);

/// Outcome of matching: a mapping when one exists, else the reasons none does.
struct MatchReport {
    bool matched = false;
    std::map<uint32_t, uint32_t> mapping; ///< source gpu_id -> destination gpu_id
    /// Why no mapping exists: each names the source GPU, the rule, the values, and the option
    /// that would relax it, if any.
    std::vector<std::string> reasons;
    /// Rules a mapping breaks on the user's request (device-map, force-single-gpu-restore) and
    /// ignored inputs; the mapping is still valid to use.
    std::vector<std::string> warnings;
    /// Search nodes visited (diagnostics and benchmarks).
    uint64_t searchNodes = 0;
};

/// Maps every GPU of `src` onto a distinct GPU of `dst` obeying the rules (reference-amdgpu-
/// plugin.md); complete (finds a mapping whenever one exists) and fast on symmetric machines.
MatchReport matchTopologies(const Topology& src, const Topology& dst, const MatchOptions& options);

/// matchTopologies as a Result: the mapping, or a NoMapping error whose message lists the reasons.
Result<std::map<uint32_t, uint32_t>> mapGpus(const Topology& src, const Topology& dst,
                                             const MatchOptions& options);

} // namespace hal
