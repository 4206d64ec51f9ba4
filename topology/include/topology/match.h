#pragma once
/// \file
/// Mapping the GPUs of a checkpointed topology onto the GPUs of the restoring machine.

#include "base/result.h"
#include "settings/settings.h"
#include "topology/topology.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace topology {

using base::Result;

/// Search steps a match may take before it gives up with a clear error (never a wrong answer);
/// explaining a failure has as many again. Real machines take at most a few thousand steps (64
/// partitions: under 2,000); a crafted topology is stopped after about a second.
inline constexpr uint64_t kDefaultSearchBudget = 4'000'000;

/// The most GPUs a topology may have for the matcher (a machine of 8 GPUs in 8 partitions each
/// has 64); its search state grows with the square of this.
inline constexpr size_t kMaxMatchGpus = 512;

/// What the matcher may relax and what it must honour.
struct MatchOptions {
    /// The rules that can be relaxed, one flag each (docs/options.md): per-GPU checks, the CPU
    /// (NUMA) grouping, large BAR, XGMI links and peer-to-peer links.
    settings::CompatibilityChecks checks;
    /// Require as many usable destination GPUs as source GPUs (default: superset allowed).
    bool exactGpuCount = false;
    /// Forced source -> destination assignments. They are applied even when they break a rule
    /// (each broken rule becomes a MatchReport::warnings line); the other GPUs are matched
    /// around them. A name that does not resolve to a usable destination GPU fails the match.
    std::vector<settings::DeviceMapEntry> deviceMap;
    /// Every source GPU (except device-map entries) onto one destination GPU: the first usable
    /// GPU that passes the per-GPU checks for all of them, else the first usable GPU with a
    /// warning per broken rule. Link rules do not apply.
    bool forceSingleGpu = false;
    /// When set, only these destination gpu_ids are candidates (the GPUs the restoring process
    /// can open, e.g. one render node of eight in a container).
    std::optional<std::set<uint32_t>> usableDstGpuIds;
    /// Search steps allowed (kDefaultSearchBudget); tests and benchmarks lower or raise it.
    uint64_t searchBudget = kDefaultSearchBudget;
};

/// The options the settings ask for.
MatchOptions matchOptionsFromSettings(const settings::Settings& settings);

/// An option that relaxes one matching rule, spelled as the matcher's messages name it.
struct MatchRuleOption {
    bool settings::CompatibilityChecks::*flag;
    const char* option;    ///< as the option table names it
    const char* env;       ///< CRIU_AMDGPU_* variable
    const char* legacyEnv; ///< KFD_* variable of criu's own plugin, or ""
};
/// Every option that relaxes a matching rule.
std::vector<MatchRuleOption> matchRuleOptions();

/// Outcome of matching: a mapping when one exists, else the reasons none does.
struct MatchReport {
    bool matched = false;
    std::map<uint32_t, uint32_t> mapping; ///< source gpu_id -> destination gpu_id
    /// Why no mapping exists: each names the source GPUs, the rule, the values, and the options
    /// that govern it, saying for each whether turning it off would allow a mapping (checked)
    /// and what that costs the job.
    std::vector<std::string> reasons;
    /// Rules a mapping breaks on the user's request (device-map, force-single-gpu-restore) and
    /// ignored inputs; the mapping is still valid to use.
    std::vector<std::string> warnings;
    /// Search nodes visited and budget steps taken by the search (diagnostics and benchmarks).
    uint64_t searchNodes = 0;
    uint64_t searchSteps = 0;
    /// The search budget ran out before the search could decide (reasons says so).
    bool budgetExhausted = false;
};

/// Maps every GPU of `src` onto a distinct GPU of `dst` obeying the rules (reference-amdgpu-
/// plugin.md); complete (finds a mapping whenever one exists) and fast on symmetric machines.
MatchReport matchTopologies(const Topology& src, const Topology& dst, const MatchOptions& options);

/// The mapping of `report`, or a NoMapping error whose message lists its reasons.
Result<std::map<uint32_t, uint32_t>> mappingOf(const MatchReport& report);

/// matchTopologies as a Result: the mapping, or a NoMapping error whose message lists the reasons.
Result<std::map<uint32_t, uint32_t>> mapGpus(const Topology& src, const Topology& dst,
                                             const MatchOptions& options);

/// The GPUs of `topo` whose render node `devRoot/dri/renderD<minor>` exists (what a process that
/// sees `devRoot` as its /dev can open).
std::set<uint32_t> gpusWithRenderNodes(const Topology& topo, const std::string& devRoot);

/// When `report` failed while only the GPUs `usable` of `local` can be opened (some cannot), adds
/// the reason: which GPUs can and cannot, by render node, with `view` (what the process was
/// given, may be empty) and what to give the container.
void explainUnusableGpus(MatchReport& report, const Topology& local,
                         const std::optional<std::set<uint32_t>>& usable, const std::string& view);

} // namespace topology
