// The per-GPU rules: properties that must be equal, relaxable comparisons, the CPU-link kinds a
// GPU keeps (large BAR, XGMI to its CPU), and the options that relax them.
#include "match_model.h"

#include "base/result.h"

#include <algorithm>

namespace topology::match {

using base::strFormat;

namespace {

using Flag = bool settings::CompatibilityChecks::*;

// A per-GPU rule other than equality: "destination >= source" or "equal" on a profile value,
// in force while every flag in `flags` is on.
struct Check {
    const char* what; // for messages
    std::vector<Flag> flags;
    uint64_t (*value)(const UnaryProfile&);
    bool atLeast;
    bool yesNo; // a property the GPU has or lacks: values print as "yes"/"no"
};

bool hasKind(const UnaryProfile& p, CpuKind kind) {
    for (CpuKind k = 0; k < kCpuKinds; ++k)
        if (((p.cpuKinds >> k) & 1) && (k & kind) == kind)
            return true;
    return false;
}

// For a source profile: it has a link of the kind; for a destination: it serves the kind. Both
// read "has it" because a destination's cpuKinds are what it has too.
uint64_t largeBar(const UnaryProfile& p) {
    return hasKind(p, kKindTwoWay) ? 1 : 0;
}
uint64_t xgmiToCpu(const UnaryProfile& p) {
    return hasKind(p, kKindXgmi) ? 1 : 0;
}
uint64_t twoWayXgmiToCpu(const UnaryProfile& p) {
    return hasKind(p, kKindXgmi | kKindTwoWay) ? 1 : 0;
}

const std::vector<Check>& checks() {
    using C = settings::CompatibilityChecks;
    static const std::vector<Check> table = {
        {"capability",
         {&C::capability},
         [](const UnaryProfile& p) { return p.capability; },
         false,
         false},
        {"VRAM", {&C::vramSize}, [](const UnaryProfile& p) { return p.vram; }, true, false},
        {"num_gws", {&C::numGws}, [](const UnaryProfile& p) { return p.numGws; }, true, false},
        {"caches_count",
         {&C::cachesCount},
         [](const UnaryProfile& p) { return p.caches; },
         true,
         false},
        {"fw_version", {&C::fwVersion}, [](const UnaryProfile& p) { return p.fw; }, true, false},
        {"sdma_fw_version",
         {&C::sdmaFwVersion},
         [](const UnaryProfile& p) { return p.sdmaFw; },
         true,
         false},
        {"large BAR (a two-way link with a CPU node)", {&C::largeBar}, largeBar, true, true},
        {"an XGMI link to a CPU node", {&C::xgmiLink}, xgmiToCpu, true, true},
        {"a two-way XGMI link with a CPU node",
         {&C::largeBar, &C::xgmiLink},
         twoWayXgmiToCpu,
         true,
         true},
    };
    return table;
}

bool inForce(const Check& c, const settings::CompatibilityChecks& enabled) {
    return std::all_of(c.flags.begin(), c.flags.end(), [&](Flag f) { return enabled.*f; });
}

bool passes(const Check& c, const UnaryProfile& src, const UnaryProfile& dst) {
    uint64_t s = c.value(src), d = c.value(dst);
    return c.atLeast ? d >= s : d == s;
}

std::string valueText(const Check& c, uint64_t v) {
    if (c.yesNo)
        return v ? "yes" : "no";
    return std::to_string(v);
}

std::string optionNames(const Check& c) {
    std::string out;
    for (Flag f : c.flags)
        out += std::string(out.empty() ? "" : " and ") + relaxationOf(f).option;
    return out;
}

std::string listValues(std::vector<uint64_t> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::string out;
    for (size_t i = 0; i < values.size() && i < 6; ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    if (values.size() > 6)
        out += ", ...";
    return out;
}

uint64_t equalValue(const Node& n, const std::string& key) {
    if (key == "vram_public") {
        for (const MemBank& b : n.memBanks)
            if (b.heapType == 1)
                return 1;
        return 0;
    }
    return n.prop(key);
}

} // namespace

const std::vector<Relaxation>& relaxations() {
    using C = settings::CompatibilityChecks;
    static const std::vector<Relaxation> table = {
        {&C::capability, "capability-check", "CRIU_AMDGPU_CAPABILITY_CHECK", "KFD_CAPABILITY_CHECK",
         "the destination GPU reports other capability flags, so features the job detected when "
         "it started may be missing"},
        {&C::vramSize, "vram-size-check", "CRIU_AMDGPU_VRAM_SIZE_CHECK", "KFD_VRAM_SIZE_CHECK",
         "the destination GPU has less VRAM, so the restore fails if the job's buffers do not fit"},
        {&C::numGws, "num-gws-check", "CRIU_AMDGPU_NUM_GWS_CHECK", "KFD_NUM_GWS_CHECK",
         "the destination GPU has fewer global wave syncs, so a job that uses them may not get "
         "them back"},
        {&C::cachesCount, "caches-count-check", "CRIU_AMDGPU_CACHES_COUNT_CHECK",
         "KFD_CACHES_COUNT_CHECK",
         "the destination GPU reports fewer caches; code tuned to the "
         "cache layout may run slower"},
        {&C::fwVersion, "fw-version-check", "CRIU_AMDGPU_FW_VERSION_CHECK", "KFD_FW_VER_CHECK",
         "the destination GPU runs older firmware, which may lack fixes or features the job used"},
        {&C::sdmaFwVersion, "sdma-fw-version-check", "CRIU_AMDGPU_SDMA_FW_VERSION_CHECK",
         "KFD_SDMA_FW_VER_CHECK",
         "the destination GPU runs older SDMA firmware, which may lack "
         "fixes or features the job used"},
        {&C::numa, "numa-check", "CRIU_AMDGPU_NUMA_CHECK", "KFD_NUMA_CHECK",
         "GPUs may be attached to other CPU nodes than before, so the job's host memory may sit on "
         "another socket (slower, nothing fails)"},
        {&C::largeBar, "large-bar-check", "CRIU_AMDGPU_LARGE_BAR_CHECK", "",
         "a GPU whose whole VRAM the CPU and its peers could map may land on one that shows only "
         "a small window, and a job that maps all of a GPU's VRAM from the host or from a peer "
         "faults after restore"},
        {&C::xgmiLink, "xgmi-link-check", "CRIU_AMDGPU_XGMI_LINK_CHECK", "",
         "XGMI links may become PCIe, so transfers between those GPUs (or to their CPU) are "
         "several times slower"},
        {&C::peerLink, "peer-link-check", "CRIU_AMDGPU_PEER_LINK_CHECK", "",
         "GPUs that reached each other peer-to-peer may land where they cannot (or only one way), "
         "and a job that accesses a peer GPU's memory directly faults after restore"},
    };
    return table;
}

const Relaxation& relaxationOf(bool settings::CompatibilityChecks::*flag) {
    for (const Relaxation& r : relaxations())
        if (r.flag == flag)
            return r;
    return relaxations().front();
}

std::string relaxSpelling(const Relaxation& r) {
    return strFormat("%s=false (%s=0)", r.option, *r.legacyEnv ? r.legacyEnv : r.env);
}

const std::vector<std::string>& equalProperties() {
    static const std::vector<std::string> keys = {"simd_count",
                                                  "mem_banks_count",
                                                  "max_waves_per_simd",
                                                  "lds_size_in_kb",
                                                  "wave_front_size",
                                                  "array_count",
                                                  "simd_arrays_per_engine",
                                                  "cu_per_simd_array",
                                                  "simd_per_cu",
                                                  "max_slots_scratch_cu",
                                                  "vendor_id",
                                                  "device_id",
                                                  "num_sdma_engines",
                                                  "num_sdma_xgmi_engines",
                                                  "num_sdma_queues_per_engine",
                                                  "num_cp_queues",
                                                  "vram_public"};
    return keys;
}

namespace {

// Where readProfile puts each key it reads: an equalProperties() position, or one of these.
enum Slot : int { kCapability = -1, kNumGws = -2, kCaches = -3, kFw = -4, kSdmaFw = -5 };

// The keys a profile reads, sorted as std::map sorts them, with their slots.
const std::vector<std::pair<std::string, int>>& profileKeys() {
    static const std::vector<std::pair<std::string, int>> keys = [] {
        std::vector<std::pair<std::string, int>> k;
        const std::vector<std::string>& equal = equalProperties();
        for (size_t i = 0; i < equal.size(); ++i)
            if (equal[i] != "vram_public")
                k.push_back({equal[i], static_cast<int>(i)});
        k.push_back({"capability", kCapability});
        k.push_back({"num_gws", kNumGws});
        k.push_back({"caches_count", kCaches});
        k.push_back({"fw_version", kFw});
        k.push_back({"sdma_fw_version", kSdmaFw});
        std::sort(k.begin(), k.end());
        return k;
    }();
    return keys;
}

} // namespace

UnaryProfile readProfile(const Side& side, size_t gpu) {
    const Node& node = *side.gpus[gpu];
    UnaryProfile p;
    const std::vector<std::string>& equal = equalProperties();
    p.equal.assign(equal.size(), 0);
    // One walk over the node's (sorted) properties and the sorted keys, instead of a lookup each.
    const auto& keys = profileKeys();
    auto it = node.properties.begin();
    size_t k = 0;
    while (it != node.properties.end() && k < keys.size()) {
        int c = it->first.compare(keys[k].first);
        if (c < 0) {
            ++it;
            continue;
        }
        if (c > 0) {
            ++k;
            continue;
        }
        int slot = keys[k].second;
        uint64_t v = it->second;
        switch (slot) {
        case kCapability:
            p.capability = v;
            break;
        case kNumGws:
            p.numGws = v;
            break;
        case kCaches:
            p.caches = v;
            break;
        case kFw:
            p.fw = v;
            break;
        case kSdmaFw:
            p.sdmaFw = v;
            break;
        default:
            p.equal[static_cast<size_t>(slot)] = v;
            break;
        }
        ++it;
        ++k;
    }
    for (size_t i = 0; i < equal.size(); ++i)
        if (equal[i] == "vram_public")
            p.equal[i] = equalValue(node, equal[i]);
    p.vram = node.vramSize();
    for (const CpuLink& l : side.cpuLinks[gpu])
        p.cpuKinds |= 1u << l.kind;
    p.cpuServes = cpuServes(side, gpu);
    return p;
}

bool unaryCompatible(const UnaryProfile& s, const UnaryProfile& d,
                     const settings::CompatibilityChecks& c) {
    if (s.equal != d.equal || (c.capability && s.capability != d.capability) ||
        (c.vramSize && d.vram < s.vram) || (c.numGws && d.numGws < s.numGws) ||
        (c.cachesCount && d.caches < s.caches) || (c.fwVersion && d.fw < s.fw) ||
        (c.sdmaFwVersion && d.sdmaFw < s.sdmaFw))
        return false;
    for (CpuKind k = 0; k < kCpuKinds; ++k)
        if ((s.cpuKinds >> k) & 1) {
            CpuKind need = neededKind(k, c);
            if (need && !((d.cpuServes >> need) & 1))
                return false;
        }
    return true;
}

std::vector<std::string> unaryViolations(const Side& s, size_t a, const Side& d, size_t A,
                                         const settings::CompatibilityChecks& enabled) {
    const Node& src = *s.gpus[a];
    const Node& dst = *d.gpus[A];
    std::vector<std::string> out;
    for (const std::string& key : equalProperties()) {
        uint64_t sv = equalValue(src, key), dv = equalValue(dst, key);
        if (sv != dv)
            out.push_back(strFormat("%s differs (source %llu, destination %llu)", key.c_str(),
                                    (unsigned long long)sv, (unsigned long long)dv));
    }
    const UnaryProfile& sp = unaryProfile(s, a);
    const UnaryProfile& dp = unaryProfile(d, A);
    for (const Check& c : checks()) {
        if (!inForce(c, enabled) || passes(c, sp, dp))
            continue;
        if (c.yesNo)
            out.push_back(strFormat("the source GPU has %s and the destination GPU has not (%s)",
                                    c.what, optionNames(c).c_str()));
        else
            out.push_back(strFormat("%s %s (source %s, destination %s; %s)", c.what,
                                    c.atLeast ? "is smaller" : "differs",
                                    valueText(c, c.value(sp)).c_str(),
                                    valueText(c, c.value(dp)).c_str(), optionNames(c).c_str()));
    }
    return out;
}

void addOption(std::vector<Flag>& options, Flag flag) {
    if (std::find(options.begin(), options.end(), flag) == options.end())
        options.push_back(flag);
}

std::vector<bool settings::CompatibilityChecks::*>
unaryBreakOptions(const UnaryProfile& src, const UnaryProfile& dst,
                  const settings::CompatibilityChecks& enabled) {
    std::vector<Flag> out;
    if (src.equal != dst.equal)
        return out; // an equal property differs: no option helps
    for (const Check& c : checks())
        if (inForce(c, enabled) && !passes(c, src, dst))
            for (Flag f : c.flags)
                addOption(out, f);
    return out;
}

Reason explainUnary(const Side& s, size_t a, const Side& d, const std::vector<size_t>& candidates,
                    const settings::CompatibilityChecks& enabled) {
    std::string who = describeSrc(*s.gpus[a]);
    if (candidates.empty())
        return {who + ": no usable destination GPU", {}};
    const Node& src = *s.gpus[a];
    std::vector<size_t> left = candidates;
    for (const std::string& key : equalProperties()) {
        uint64_t want = equalValue(src, key);
        std::vector<size_t> next;
        std::vector<uint64_t> seen;
        for (size_t u : left) {
            seen.push_back(equalValue(*d.gpus[u], key));
            if (seen.back() == want)
                next.push_back(u);
        }
        if (next.empty())
            return {strFormat("%s: no destination GPU has %s %llu (candidates have %s); %s must "
                              "be equal and cannot be relaxed",
                              who.c_str(), key.c_str(), (unsigned long long)want,
                              listValues(seen).c_str(), key.c_str()),
                    {}};
        left = std::move(next);
    }
    const UnaryProfile& sp = unaryProfile(s, a);
    for (const Check& c : checks()) {
        if (!inForce(c, enabled))
            continue;
        std::vector<size_t> next;
        std::vector<uint64_t> seen;
        for (size_t u : left) {
            const UnaryProfile& dp = unaryProfile(d, u);
            seen.push_back(c.value(dp));
            if (passes(c, sp, dp))
                next.push_back(u);
        }
        if (!next.empty()) {
            left = std::move(next);
            continue;
        }
        uint64_t want = c.value(sp);
        uint64_t best = *std::max_element(seen.begin(), seen.end());
        std::string text;
        if (c.yesNo)
            text = strFormat("%s has %s, and none of the %zu destination GPU%s that pass the other "
                             "checks has it (%s)",
                             who.c_str(), c.what, seen.size(), seen.size() == 1 ? "" : "s",
                             optionNames(c).c_str());
        else if (std::string(c.what) == "VRAM")
            text = strFormat("%s: no destination GPU has enough VRAM (needs %llu bytes, largest "
                             "candidate has %llu; %s)",
                             who.c_str(), (unsigned long long)want, (unsigned long long)best,
                             optionNames(c).c_str());
        else if (c.atLeast)
            text = strFormat("%s: no destination GPU has %s >= %llu (largest candidate has %llu; "
                             "%s)",
                             who.c_str(), c.what, (unsigned long long)want,
                             (unsigned long long)best, optionNames(c).c_str());
        else
            text = strFormat("%s: no destination GPU has %s %llu (candidates have %s; %s)",
                             who.c_str(), c.what, (unsigned long long)want,
                             listValues(seen).c_str(), optionNames(c).c_str());
        return {text, c.flags};
    }
    return {};
}

} // namespace topology::match
