#include "match_model.h"

#include "hal/result.h"

#include <algorithm>
#include <functional>

namespace hal::match {
namespace {

/// A relaxable "destination >= source" or "equal" check.
struct Check {
    const char* what;       // for messages
    const char* option;     // config option name
    const char* env;        // environment variable
    bool config::CompatibilityChecks::*flag;
    std::function<uint64_t(const Node&)> value;
    bool atLeast; // true: dst >= src; false: equal
};

const std::vector<Check>& checks() {
    static const std::vector<Check> table = {
        {"capability", "capability-check", "KFD_CAPABILITY_CHECK",
         &config::CompatibilityChecks::capability, [](const Node& n) { return n.prop("capability"); },
         false},
        {"VRAM", "vram-size-check", "KFD_VRAM_SIZE_CHECK", &config::CompatibilityChecks::vramSize,
         [](const Node& n) { return n.vramSize(); }, true},
        {"num_gws", "num-gws-check", "KFD_NUM_GWS_CHECK", &config::CompatibilityChecks::numGws,
         [](const Node& n) { return n.prop("num_gws"); }, true},
        {"caches_count", "caches-count-check", "KFD_CACHES_COUNT_CHECK",
         &config::CompatibilityChecks::cachesCount,
         [](const Node& n) { return n.prop("caches_count"); }, true},
        {"fw_version", "fw-version-check", "KFD_FW_VER_CHECK", &config::CompatibilityChecks::fwVersion,
         [](const Node& n) { return n.prop("fw_version"); }, true},
        {"sdma_fw_version", "sdma-fw-version-check", "KFD_SDMA_FW_VER_CHECK",
         &config::CompatibilityChecks::sdmaFwVersion,
         [](const Node& n) { return n.prop("sdma_fw_version"); }, true},
    };
    return table;
}

uint64_t equalValue(const Node& n, const std::string& key) {
    if (key == "vram_public")
        return vramPublic(n) ? 1 : 0;
    return n.prop(key);
}

bool passes(const Check& c, const Node& src, const Node& dst) {
    uint64_t s = c.value(src), d = c.value(dst);
    return c.atLeast ? d >= s : d == s;
}

std::string relaxHint(const Check& c) {
    return strFormat("; set %s=0 or %s=false to allow", c.env, c.option);
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

} // namespace

const std::vector<std::string>& equalProperties() {
    static const std::vector<std::string> keys = {
        "simd_count", "mem_banks_count", "max_waves_per_simd", "lds_size_in_kb",
        "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array",
        "simd_per_cu", "max_slots_scratch_cu", "vendor_id", "device_id", "num_sdma_engines",
        "num_sdma_xgmi_engines", "num_sdma_queues_per_engine", "num_cp_queues", "vram_public"};
    return keys;
}

bool vramPublic(const Node& node) {
    for (const MemBank& b : node.memBanks)
        if (b.heapType == 1)
            return true;
    return false;
}

UnaryProfile unaryProfile(const Node& node) {
    UnaryProfile p;
    for (const std::string& key : equalProperties())
        p.equal.push_back(equalValue(node, key));
    p.capability = node.prop("capability");
    p.vram = node.vramSize();
    p.numGws = node.prop("num_gws");
    p.caches = node.prop("caches_count");
    p.fw = node.prop("fw_version");
    p.sdmaFw = node.prop("sdma_fw_version");
    return p;
}

bool unaryCompatible(const UnaryProfile& s, const UnaryProfile& d,
                     const config::CompatibilityChecks& c) {
    return s.equal == d.equal && (!c.capability || s.capability == d.capability) &&
           (!c.vramSize || d.vram >= s.vram) && (!c.numGws || d.numGws >= s.numGws) &&
           (!c.cachesCount || d.caches >= s.caches) && (!c.fwVersion || d.fw >= s.fw) &&
           (!c.sdmaFwVersion || d.sdmaFw >= s.sdmaFw);
}

bool unaryCompatible(const Node& src, const Node& dst, const config::CompatibilityChecks& enabled) {
    for (const std::string& key : equalProperties())
        if (equalValue(src, key) != equalValue(dst, key))
            return false;
    for (const Check& c : checks())
        if (enabled.*c.flag && !passes(c, src, dst))
            return false;
    return true;
}

std::vector<std::string> unaryViolations(const Node& src, const Node& dst,
                                         const config::CompatibilityChecks& enabled) {
    std::vector<std::string> out;
    for (const std::string& key : equalProperties()) {
        uint64_t s = equalValue(src, key), d = equalValue(dst, key);
        if (s != d)
            out.push_back(strFormat("%s differs (source %llu, destination %llu)", key.c_str(),
                                    (unsigned long long)s, (unsigned long long)d));
    }
    for (const Check& c : checks()) {
        if (!(enabled.*c.flag) || passes(c, src, dst))
            continue;
        out.push_back(strFormat("%s %s (source %llu, destination %llu; %s / %s)", c.what,
                                c.atLeast ? "is smaller" : "differs",
                                (unsigned long long)c.value(src), (unsigned long long)c.value(dst),
                                c.option, c.env));
    }
    return out;
}

std::string explainUnary(const Node& src, const std::vector<const Node*>& candidates,
                         const config::CompatibilityChecks& enabled) {
    std::string who = describeSrc(src);
    if (candidates.empty())
        return who + ": no usable destination GPU";
    std::vector<const Node*> left = candidates;
    for (const std::string& key : equalProperties()) {
        uint64_t want = equalValue(src, key);
        std::vector<const Node*> next;
        std::vector<uint64_t> seen;
        for (const Node* d : left) {
            seen.push_back(equalValue(*d, key));
            if (seen.back() == want)
                next.push_back(d);
        }
        if (next.empty())
            return strFormat("%s: no destination GPU has %s %llu (candidates have %s); %s must be "
                             "equal and cannot be relaxed",
                             who.c_str(), key.c_str(), (unsigned long long)want,
                             listValues(seen).c_str(), key.c_str());
        left = std::move(next);
    }
    for (const Check& c : checks()) {
        if (!(enabled.*c.flag))
            continue;
        uint64_t want = c.value(src);
        std::vector<const Node*> next;
        std::vector<uint64_t> seen;
        for (const Node* d : left) {
            seen.push_back(c.value(*d));
            if (passes(c, src, *d))
                next.push_back(d);
        }
        if (!next.empty()) {
            left = std::move(next);
            continue;
        }
        uint64_t best = *std::max_element(seen.begin(), seen.end());
        if (c.atLeast && std::string(c.what) == "VRAM")
            return strFormat("%s: no destination GPU has enough VRAM (needs %llu bytes, largest "
                             "candidate has %llu)%s",
                             who.c_str(), (unsigned long long)want, (unsigned long long)best,
                             relaxHint(c).c_str());
        if (c.atLeast)
            return strFormat("%s: no destination GPU has %s >= %llu (largest candidate has %llu)%s",
                             who.c_str(), c.what, (unsigned long long)want,
                             (unsigned long long)best, relaxHint(c).c_str());
        return strFormat("%s: no destination GPU has %s %llu (candidates have %s)%s", who.c_str(),
                         c.what, (unsigned long long)want, listValues(seen).c_str(),
                         relaxHint(c).c_str());
    }
    return "";
}

} // namespace hal::match
