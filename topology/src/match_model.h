#pragma once
// The matcher's internal model: each side's GPUs as positions with link bitsets, the rules as
// domains and link requirements, the constraint search and the diagnostics built on it.
//
// The rules (reference-amdgpu-plugin.md, issue 16), each governed by one option:
//  - per GPU: equal properties (no option), capability, VRAM, num_gws, caches, firmware (their
//    checks); large BAR, a two-way link with a CPU node, stays large BAR (large-bar-check); an
//    XGMI link to a CPU node stays XGMI (xgmi-link-check);
//  - CPU grouping: the GPU->CPU links map CPU nodes one to one (numa-check), and then the large
//    BAR and XGMI rules hold for the link to the mapped CPU node;
//  - GPU pairs: a link a->b needs a link A->B between the destinations; an XGMI one needs an
//    XGMI one (xgmi-link-check); any other needs a PCIe or XGMI one, and a two-way link (a
//    return link of the same type) a two-way one (peer-link-check).
// Only io_links of type 2 (PCIe) and 11 (XGMI) to nodes that are present count (as upstream, and as
// checkpoint images carry them); p2p_links, which mix peer links with indirect paths through CPU
// nodes and are not in images, are not compared.

#include "gpu_set.h"
#include "settings/settings.h"
#include "topology/topology.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace topology::match {

/// Link types the rules know, as indices.
enum LinkIndex : size_t { kPcie = 0, kXgmi = 1, kLinkTypes = 2 };

/// What a GPU-CPU link offers or a source one asks for: bit 0 XGMI, bit 1 two-way. A link of kind
/// k serves a need of kind n when (k & n) == n.
using CpuKind = unsigned;
inline constexpr CpuKind kKindXgmi = 1, kKindTwoWay = 2, kCpuKinds = 4;

/// A GPU's link to a CPU (non-GPU) node.
struct CpuLink {
    int cpu = 0;      ///< position in Side::cpus
    CpuKind kind = 0; ///< XGMI and/or two-way (the CPU links back with the same type)
    bool operator==(const CpuLink&) const = default;
};

/// The values the per-GPU rules compare, read once per GPU.
struct UnaryProfile {
    std::vector<uint64_t> equal; ///< equalProperties() values in order
    uint64_t capability = 0, vram = 0, numGws = 0, caches = 0, fw = 0, sdmaFw = 0;
    unsigned cpuKinds = 0;  ///< bit k: the GPU has a CPU link of exactly kind k
    unsigned cpuServes = 0; ///< cpuServes()
    bool operator==(const UnaryProfile&) const = default;
};
/// One machine as the matcher sees it.
struct Side {
    std::vector<const Node*> gpus;
    std::vector<const Node*> cpus;              ///< non-GPU nodes linked with GPUs
    std::vector<GpuSet> out[kLinkTypes];        ///< per GPU and type: the GPUs it has a link to
    std::vector<GpuSet> in[kLinkTypes];         ///< per GPU and type: the GPUs with a link to it
    std::vector<std::vector<CpuLink>> cpuLinks; ///< per GPU, distinct
    /// [cpu][need]: GPUs with a link to that CPU node serving a need of that kind.
    std::vector<std::vector<GpuSet>> gpusServing;
    std::vector<UnaryProfile> profiles; ///< per GPU
};

/// Builds a Side from a topology and its GPU nodes (topo.gpus()).
Side buildSide(const Topology& topo, std::vector<const Node*> gpus);

/// The needs a GPU's CPU links make under the rules in force (bit n: a need of kind n), and the
/// needs its CPU links can serve (bit n set when some link serves kind n).
unsigned cpuNeeds(const Side& side, size_t gpu, const settings::CompatibilityChecks& checks);
unsigned cpuServes(const Side& side, size_t gpu);
/// The CPU-link kind a source link must keep under the rules in force.
CpuKind neededKind(CpuKind sourceKind, const settings::CompatibilityChecks& checks);

/// Properties that must be equal on both sides (reference-amdgpu-plugin.md; not io_links_count).
const std::vector<std::string>& equalProperties();

/// The profile of GPU `gpu` of `side` (read when the side was built).
inline const UnaryProfile& unaryProfile(const Side& side, size_t gpu) {
    return side.profiles[gpu];
}
/// Reads the profile of GPU `gpu` of a side whose links are built.
UnaryProfile readProfile(const Side& side, size_t gpu);
/// True when dst can stand in for src on its own under the per-GPU rules in force.
bool unaryCompatible(const UnaryProfile& src, const UnaryProfile& dst,
                     const settings::CompatibilityChecks& checks);

/// A relaxable rule and the option that governs it.
struct Relaxation {
    bool settings::CompatibilityChecks::*flag;
    const char* option;    ///< the option's name (config's table)
    const char* env;       ///< its CRIU_AMDGPU_* variable
    const char* legacyEnv; ///< the KFD_* variable criu's plugin reads, or ""
    const char* cost;      ///< what turning it off costs the job
};
/// Every relaxable rule, in the order messages list them.
const std::vector<Relaxation>& relaxations();
/// The relaxation governed by `flag`.
const Relaxation& relaxationOf(bool settings::CompatibilityChecks::*flag);
/// "vram-size-check=false (KFD_VRAM_SIZE_CHECK=0)".
std::string relaxSpelling(const Relaxation& r);

/// A line of explanation: the rule broken, with its values, and the options governing it.
struct Reason {
    std::string text;
    std::vector<bool settings::CompatibilityChecks::*> options;
};
/// Adds `flag` to `options` unless it is there.
void addOption(std::vector<bool settings::CompatibilityChecks::*>& options,
               bool settings::CompatibilityChecks::*flag);

/// Why no candidate can stand in for source GPU `a`: the first rule that eliminates the last
/// candidate, with the values. Empty text when some candidate passes.
Reason explainUnary(const Side& s, size_t a, const Side& d, const std::vector<size_t>& candidates,
                    const settings::CompatibilityChecks& checks);
/// Every per-GPU rule in force that dst breaks for src, one line each, naming its option.
std::vector<std::string> unaryViolations(const Side& s, size_t a, const Side& d, size_t A,
                                         const settings::CompatibilityChecks& checks);
/// The options governing the per-GPU rules in force that dst breaks for src (none when an equal
/// property differs: no option helps then).
std::vector<bool settings::CompatibilityChecks::*>
unaryBreakOptions(const UnaryProfile& src, const UnaryProfile& dst,
                  const settings::CompatibilityChecks& enabled);

/// A link requirement class: which destination link types satisfy a source link, and whether the
/// destination link must be two-way. Index: bit 0 XGMI only, bit 1 two-way.
inline constexpr size_t kLinkClasses = 4;

/// The constraint problem: map every active source GPU onto a distinct destination GPU.
struct Problem {
    const Side* src = nullptr;
    const Side* dst = nullptr;
    settings::CompatibilityChecks checks; ///< the rules in force
    std::vector<GpuSet> domain;           ///< per source GPU: allowed destination GPUs
    std::vector<int> forced;              ///< per source GPU: forced destination position, or -1
    std::vector<bool> active;             ///< per source GPU: part of this problem
    std::vector<bool> usable;             ///< per destination GPU: the restoring process can use it
    /// Source links by class: need[c][a] = GPUs b whose link a->b asks for class c.
    std::vector<GpuSet> need[kLinkClasses];
    /// needFrom[c][b] = GPUs a whose link a->b asks for class c.
    std::vector<GpuSet> needFrom[kLinkClasses];
    /// Destination: allow[c][A] = GPUs B such that A->B satisfies class c; allowFrom[c][B] = A's.
    std::vector<GpuSet> allow[kLinkClasses];
    std::vector<GpuSet> allowFrom[kLinkClasses];
    /// Per source GPU: the GPUs a link rule ties it to (either direction).
    std::vector<GpuSet> linked;
    /// Per source GPU: its XGMI peers (either direction), to finish a hive before another.
    std::vector<GpuSet> hive;
};

/// The problem for these sides under `checks`: per-GPU rules into domains (restricted to
/// `usable` destinations; a forced GPU's domain is its forced destination), link rules into
/// requirement classes.
Problem buildProblem(const Side& s, const Side& d, const settings::CompatibilityChecks& checks,
                     const std::vector<int>& forced, const std::vector<bool>& usable);

/// Search work: every search node, CPU-mapping step and augmenting-path step costs one. Shared by
/// the solves of one match, so diagnostics cannot run longer than the budget either.
struct Budget {
    uint64_t left = 0;
    bool exhausted = false;
    /// Takes `steps`; false (and exhausted) once the budget is spent.
    bool take(uint64_t steps) {
        if (steps > left) {
            left = 0;
            exhausted = true;
            return false;
        }
        left -= steps;
        return true;
    }
};

/// Outcome of the search.
struct Solution {
    bool found = false;
    bool exhausted = false;            ///< the budget ran out: neither found nor proven impossible
    std::vector<int> assignment;       ///< per source GPU: destination position or -1
    uint64_t nodes = 0;                ///< search nodes visited (for tests and benchmarks)
    std::vector<std::string> warnings; ///< forced entries whose CPU grouping could not be kept
};

/// Complete search: finds an assignment whenever one exists, unless the budget runs out first.
Solution solve(const Problem& problem, Budget& budget);

/// A source GPU for messages: "source GPU 0x1234 (node 2)".
std::string describeSrc(const Node& node);
/// A destination GPU for messages: "destination GPU 0x1234 (node 2, renderD130)".
std::string describeDst(const Node& node);
/// "0x1000 (node 1), 0x1111 (node 2)", at most 8 then "and N more".
std::string gpuList(const Side& side, const std::vector<size_t>& gpus);

/// Rebuilds the problem under other checks (forced entries and usable GPUs as before).
using ProblemBuilder = std::function<Problem(const settings::CompatibilityChecks&)>;

/// Why a problem has no solution, as the lines a user reads. Each line names the rule broken,
/// the GPUs and values, and the options governing it, and for each such option either that
/// setting it to false would allow a mapping and what that costs (verified by solving with only
/// that option relaxed, so the mapping it allows breaks no other rule) or that relaxing it alone
/// is not enough. When several rules block together, the lines follow one another ("with those
/// relaxed, ...") and end with the set of options that together would allow a mapping. When
/// `budget` runs out the lines end by saying so.
std::vector<std::string> explainFailure(const Problem& problem, const ProblemBuilder& rebuild,
                                        Budget& budget);

/// The line a user reads when the budget ran out before the search could decide.
std::string budgetExhaustedReason(uint64_t budget);

} // namespace topology::match
