#include "topology/match.h"
#include "base/log.h"
#include "match_model.h"

#include <algorithm>
#include <set>

namespace topology {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;

MatchOptions matchOptionsFromSettings(const settings::Settings& settings) {
    MatchOptions o;
    o.checks = settings.checks;
    o.exactGpuCount = settings.exactGpuCount;
    o.deviceMap = settings.deviceMap;
    o.forceSingleGpu = settings.forceSingleGpuRestore;
    return o;
}

std::vector<MatchRuleOption> matchRuleOptions() {
    std::vector<MatchRuleOption> out;
    for (const match::Relaxation& r : match::relaxations())
        out.push_back({r.flag, r.option, r.env, r.legacyEnv});
    return out;
}

namespace {

using match::GpuSet;

std::string describeEntry(const settings::DeviceMapEntry& e) {
    if (e.dstRenderMinor >= 0)
        return strFormat("device-map entry %s -> renderD%d", gpuIdHex(e.srcGpuId).c_str(),
                         e.dstRenderMinor);
    return strFormat("device-map entry %s -> %s", gpuIdHex(e.srcGpuId).c_str(),
                     gpuIdHex(e.dstGpuId).c_str());
}

std::string idList(const std::vector<const Node*>& gpus) {
    std::string out;
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (i == 8) {
            out += strFormat(" and %zu more", gpus.size() - 8);
            break;
        }
        out += strFormat("%s%s (node %u)", i ? ", " : "", gpuIdHex(gpus[i]->gpuId).c_str(),
                         gpus[i]->index);
    }
    return out.empty() ? "none" : out;
}

// Resolves device-map entries to {src position -> dst position}; false with reasons on bad input.
bool resolveDeviceMap(const match::Side& s, const match::Side& d, const std::vector<bool>& usable,
                      const MatchOptions& o, std::vector<int>* forced, MatchReport* report) {
    forced->assign(s.gpus.size(), -1);
    std::set<size_t> takenDst;
    bool ok = true;
    for (const settings::DeviceMapEntry& e : o.deviceMap) {
        int sp = -1, dp = -1;
        for (size_t i = 0; i < s.gpus.size(); ++i)
            if (s.gpus[i]->gpuId == e.srcGpuId)
                sp = static_cast<int>(i);
        for (size_t i = 0; i < d.gpus.size(); ++i)
            if (e.dstRenderMinor >= 0 ? d.gpus[i]->renderMinor() == e.dstRenderMinor
                                      : d.gpus[i]->gpuId == e.dstGpuId)
                dp = static_cast<int>(i);
        if (sp < 0) {
            report->reasons.push_back(strFormat(
                "%s: the checkpoint has no source GPU %s (source "
                "GPUs: %s)",
                describeEntry(e).c_str(), gpuIdHex(e.srcGpuId).c_str(), idList(s.gpus).c_str()));
            ok = false;
            continue;
        }
        std::string who = match::describeSrc(*s.gpus[static_cast<size_t>(sp)]);
        if (dp < 0) {
            std::string minors;
            for (const Node* n : d.gpus)
                minors += strFormat("%srenderD%d", minors.empty() ? "" : ", ", n->renderMinor());
            report->reasons.push_back(
                e.dstRenderMinor >= 0
                    ? strFormat("%s: %s: no destination GPU has render minor %d (destination "
                                "render nodes: %s)",
                                describeEntry(e).c_str(), who.c_str(), e.dstRenderMinor,
                                minors.empty() ? "none" : minors.c_str())
                    : strFormat("%s: %s: the destination has no GPU %s (destination GPUs: %s)",
                                describeEntry(e).c_str(), who.c_str(), gpuIdHex(e.dstGpuId).c_str(),
                                idList(d.gpus).c_str()));
            ok = false;
            continue;
        }
        if (!usable[static_cast<size_t>(dp)]) {
            report->reasons.push_back(strFormat(
                "%s: %s: %s is not usable by the restoring process", describeEntry(e).c_str(),
                who.c_str(), match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str()));
            ok = false;
            continue;
        }
        if ((*forced)[static_cast<size_t>(sp)] >= 0) {
            report->reasons.push_back(strFormat("%s: %s is named by more than one device-map entry",
                                                describeEntry(e).c_str(), who.c_str()));
            ok = false;
            continue;
        }
        if (!o.forceSingleGpu && !takenDst.insert(static_cast<size_t>(dp)).second) {
            report->reasons.push_back(
                strFormat("%s: %s: %s is already the target of another "
                          "device-map entry",
                          describeEntry(e).c_str(), who.c_str(),
                          match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str()));
            ok = false;
            continue;
        }
        (*forced)[static_cast<size_t>(sp)] = dp;
        for (const std::string& v : match::unaryViolations(s, static_cast<size_t>(sp), d,
                                                           static_cast<size_t>(dp), o.checks))
            report->warnings.push_back(
                strFormat("%s: %s onto %s: %s", describeEntry(e).c_str(), who.c_str(),
                          match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str(), v.c_str()));
    }
    return ok;
}

void forceSingle(const match::Side& s, const match::Side& d, const std::vector<bool>& usable,
                 const std::vector<int>& forced, const MatchOptions& o, MatchReport* report) {
    int target = -1, bestCount = -1;
    for (size_t u = 0; u < d.gpus.size(); ++u) {
        if (!usable[u])
            continue;
        int count = 0;
        for (size_t a = 0; a < s.gpus.size(); ++a)
            if (forced[a] < 0 && match::unaryCompatible(match::unaryProfile(s, a),
                                                        match::unaryProfile(d, u), o.checks))
                ++count;
        if (count > bestCount) {
            bestCount = count;
            target = static_cast<int>(u);
        }
    }
    if (target < 0) {
        report->reasons.push_back("force-single-gpu-restore: the destination has no usable GPU");
        return;
    }
    for (size_t a = 0; a < s.gpus.size(); ++a) {
        const Node& src = *s.gpus[a];
        size_t to = static_cast<size_t>(forced[a] >= 0 ? forced[a] : target);
        report->mapping[src.gpuId] = d.gpus[to]->gpuId;
        if (forced[a] >= 0)
            continue;
        for (const std::string& v : match::unaryViolations(s, a, d, to, o.checks))
            report->warnings.push_back(strFormat(
                "force-single-gpu-restore: %s onto %s: %s", match::describeSrc(src).c_str(),
                match::describeDst(*d.gpus[to]).c_str(), v.c_str()));
    }
    report->matched = true;
}

// Link rules between two forced GPUs are not enforced (the user named both); say which break.
void forcedLinkWarnings(const match::Problem& p, MatchReport* report) {
    static const char* const words[match::kLinkClasses] = {
        "peer-to-peer link", "XGMI link", "two-way peer-to-peer link", "two-way XGMI link"};
    static const char* const options[match::kLinkClasses] = {"peer-link-check", "xgmi-link-check",
                                                             "peer-link-check",
                                                             "xgmi-link-check and peer-link-check"};
    const match::Side& s = *p.src;
    const match::Side& d = *p.dst;
    for (size_t c = 0; c < match::kLinkClasses; ++c) {
        if (p.need[c].empty())
            continue;
        for (size_t a = 0; a < s.gpus.size(); ++a) {
            if (p.forced[a] < 0)
                continue;
            size_t A = static_cast<size_t>(p.forced[a]);
            GPUSET_FOR(b, p.need[c][a]) {
                if (p.forced[b] < 0 || p.allow[c][A].test(static_cast<size_t>(p.forced[b])))
                    continue;
                const Node& B = *d.gpus[static_cast<size_t>(p.forced[b])];
                report->warnings.push_back(strFormat(
                    "device-map: %s has a %s to %s, but %s has none to %s (%s)",
                    match::describeSrc(*s.gpus[a]).c_str(), words[c],
                    gpuIdHex(s.gpus[b]->gpuId).c_str(), match::describeDst(*d.gpus[A]).c_str(),
                    gpuIdHex(B.gpuId).c_str(), options[c]));
            }
        }
    }
}

} // namespace

MatchReport matchTopologies(const Topology& src, const Topology& dst, const MatchOptions& options) {
    MatchReport report;
    std::vector<const Node*> srcGpus = src.gpus(), dstGpus = dst.gpus();
    for (const auto* side : {&srcGpus, &dstGpus})
        if (side->size() > kMaxMatchGpus) {
            const Topology& t = side == &srcGpus ? src : dst;
            report.reasons.push_back(
                strFormat("the %s topology (%s) has %zu GPUs; the matcher handles at most %zu",
                          side == &srcGpus ? "checkpoint's" : "destination's", t.source.c_str(),
                          side->size(), kMaxMatchGpus));
            return report;
        }
    match::Side s = match::buildSide(src, std::move(srcGpus));
    match::Side d = match::buildSide(dst, std::move(dstGpus));
    size_t ns = s.gpus.size(), nd = d.gpus.size();

    std::vector<bool> usable(nd, true);
    if (options.usableDstGpuIds) {
        for (size_t u = 0; u < nd; ++u)
            usable[u] = options.usableDstGpuIds->count(d.gpus[u]->gpuId) != 0;
        for (uint32_t id : *options.usableDstGpuIds)
            if (!dst.findGpu(id))
                report.warnings.push_back(strFormat("usable GPU %s is not in the destination "
                                                    "topology; ignored",
                                                    gpuIdHex(id).c_str()));
    }
    size_t usableCount = static_cast<size_t>(std::count(usable.begin(), usable.end(), true));
    // exact-gpu-count holds for a checkpoint without GPUs too (the fuzzer found the shortcut
    // below answering "matched" onto a machine with GPUs).
    if (options.exactGpuCount && !options.forceSingleGpu && ns != usableCount) {
        report.reasons.push_back(strFormat(
            "source GPUs %s: the checkpoint used %zu GPUs and the destination has %zu usable GPUs; "
            "exact-gpu-count requires equal counts (unset exact-gpu-count to restore onto a "
            "larger machine)",
            idList(s.gpus).c_str(), ns, usableCount));
        return report;
    }
    if (ns == 0) {
        report.matched = true;
        return report;
    }

    std::vector<int> forced;
    if (!resolveDeviceMap(s, d, usable, options, &forced, &report))
        return report;
    if (options.forceSingleGpu) {
        forceSingle(s, d, usable, forced, options, &report);
        return report;
    }

    if (ns > usableCount) {
        std::vector<const Node*> usableGpus;
        for (size_t u = 0; u < nd; ++u)
            if (usable[u])
                usableGpus.push_back(d.gpus[u]);
        report.reasons.push_back(strFormat(
            "source GPUs %s: the checkpoint used %zu GPUs but the destination has only %zu usable "
            "GPUs (%s)",
            idList(s.gpus).c_str(), ns, usableCount, idList(usableGpus).c_str()));
        return report;
    }

    match::ProblemBuilder rebuild = [&](const settings::CompatibilityChecks& checks) {
        return match::buildProblem(s, d, checks, forced, usable);
    };
    match::Problem p = rebuild(options.checks);
    forcedLinkWarnings(p, &report);
    match::Budget budget{options.searchBudget};
    bool candidates = std::none_of(p.domain.begin(), p.domain.end(),
                                   [](const match::GpuSet& dom) { return dom.none(); });
    match::Solution sol;
    if (candidates) {
        sol = match::solve(p, budget);
        report.searchNodes = sol.nodes;
        for (std::string& w : sol.warnings)
            report.warnings.push_back(std::move(w));
    }
    report.searchSteps = options.searchBudget - budget.left;
    if (sol.exhausted) {
        report.budgetExhausted = true;
        report.reasons.push_back(match::budgetExhaustedReason(options.searchBudget));
        return report;
    }
    if (!sol.found) {
        // The explanation has a budget of its own: the answer (no mapping) is already known.
        match::Budget explainBudget{options.searchBudget};
        bool forcedAny = std::any_of(forced.begin(), forced.end(), [](int f) { return f >= 0; });
        for (std::string& line : match::explainFailure(p, rebuild, explainBudget))
            report.reasons.push_back(forcedAny ? line + " (with the device-map entries applied)"
                                               : line);
        return report;
    }
    report.matched = true;
    for (size_t a = 0; a < ns; ++a)
        report.mapping[s.gpus[a]->gpuId] = d.gpus[static_cast<size_t>(sol.assignment[a])]->gpuId;
    for (const std::string& w : report.warnings)
        HAL_LOG_WARN("GPU matching: %s", w.c_str());
    return report;
}

Result<std::map<uint32_t, uint32_t>> mapGpus(const Topology& src, const Topology& dst,
                                             const MatchOptions& options) {
    return mappingOf(matchTopologies(src, dst, options));
}

Result<std::map<uint32_t, uint32_t>> mappingOf(const MatchReport& report) {
    if (report.matched)
        return report.mapping;
    std::string message = "no mapping of the checkpoint's GPUs onto this machine's GPUs";
    for (const std::string& r : report.reasons)
        message += ": " + r;
    return makeError(ErrorCode::NoMapping, "%s", message.c_str());
}

} // namespace topology
