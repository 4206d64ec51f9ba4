#include "hal/log.h"
#include "hal/topology_match.h"
#include "match_model.h"

#include <algorithm>
#include <set>

namespace hal {

MatchOptions matchOptionsFromSettings(const config::Settings& settings) {
    MatchOptions o;
    o.checks = settings.checks;
    o.exactGpuCount = settings.exactGpuCount;
    o.deviceMap = settings.deviceMap;
    o.forceSingleGpu = settings.forceSingleGpuRestore;
    return o;
}

namespace {

using match::GpuSet;

std::string describeEntry(const config::DeviceMapEntry& e) {
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
    for (const config::DeviceMapEntry& e : o.deviceMap) {
        int sp = -1, dp = -1;
        for (size_t i = 0; i < s.gpus.size(); ++i)
            if (s.gpus[i]->gpuId == e.srcGpuId)
                sp = static_cast<int>(i);
        for (size_t i = 0; i < d.gpus.size(); ++i)
            if (e.dstRenderMinor >= 0 ? d.gpus[i]->renderMinor() == e.dstRenderMinor
                                      : d.gpus[i]->gpuId == e.dstGpuId)
                dp = static_cast<int>(i);
        if (sp < 0) {
            report->reasons.push_back(strFormat("%s: the checkpoint has no source GPU %s (source "
                                                "GPUs: %s)",
                                                describeEntry(e).c_str(),
                                                gpuIdHex(e.srcGpuId).c_str(), idList(s.gpus).c_str()));
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
            report->reasons.push_back(strFormat("%s: %s: %s is not usable by the restoring process",
                                                describeEntry(e).c_str(), who.c_str(),
                                                match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str()));
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
            report->reasons.push_back(strFormat("%s: %s: %s is already the target of another "
                                                "device-map entry",
                                                describeEntry(e).c_str(), who.c_str(),
                                                match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str()));
            ok = false;
            continue;
        }
        (*forced)[static_cast<size_t>(sp)] = dp;
        for (const std::string& v : match::unaryViolations(*s.gpus[static_cast<size_t>(sp)],
                                                           *d.gpus[static_cast<size_t>(dp)], o.checks))
            report->warnings.push_back(strFormat("%s: %s onto %s: %s", describeEntry(e).c_str(),
                                                 who.c_str(),
                                                 match::describeDst(*d.gpus[static_cast<size_t>(dp)]).c_str(),
                                                 v.c_str()));
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
            if (forced[a] < 0 && match::unaryCompatible(*s.gpus[a], *d.gpus[u], o.checks))
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
    const Node& dst = *d.gpus[static_cast<size_t>(target)];
    for (size_t a = 0; a < s.gpus.size(); ++a) {
        const Node& src = *s.gpus[a];
        const Node& to = forced[a] >= 0 ? *d.gpus[static_cast<size_t>(forced[a])] : dst;
        report->mapping[src.gpuId] = to.gpuId;
        if (forced[a] >= 0)
            continue;
        for (const std::string& v : match::unaryViolations(src, to, o.checks))
            report->warnings.push_back(strFormat("force-single-gpu-restore: %s onto %s: %s",
                                                 match::describeSrc(src).c_str(),
                                                 match::describeDst(to).c_str(), v.c_str()));
    }
    report->matched = true;
}

} // namespace

MatchReport matchTopologies(const Topology& src, const Topology& dst, const MatchOptions& options) {
    MatchReport report;
    match::Side s = match::buildSide(src);
    match::Side d = match::buildSide(dst);
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

    std::vector<size_t> allSrc(ns);
    for (size_t a = 0; a < ns; ++a)
        allSrc[a] = a;
    if (options.exactGpuCount && ns != usableCount) {
        report.reasons.push_back(strFormat(
            "source GPUs %s: the checkpoint used %zu GPUs and the destination has %zu usable GPUs; "
            "exact-gpu-count requires equal counts (unset exact-gpu-count to restore onto a "
            "larger machine)",
            idList(s.gpus).c_str(), ns, usableCount));
        return report;
    }
    if (ns > usableCount) {
        report.reasons.push_back(strFormat(
            "source GPUs %s: the checkpoint used %zu GPUs but the destination has only %zu usable "
            "GPUs (%s)",
            idList(s.gpus).c_str(), ns, usableCount, idList(d.gpus).c_str()));
        return report;
    }

    match::Problem p;
    p.src = &s;
    p.dst = &d;
    p.numa = options.checks.numa;
    p.active.assign(ns, true);
    p.forced = forced;
    p.domain.assign(ns, GpuSet(nd));
    std::vector<const Node*> usableNodes;
    for (size_t u = 0; u < nd; ++u)
        if (usable[u])
            usableNodes.push_back(d.gpus[u]);
    std::vector<match::UnaryProfile> dstProfiles;
    for (const Node* n : d.gpus)
        dstProfiles.push_back(match::unaryProfile(*n));
    for (size_t a = 0; a < ns; ++a) {
        if (forced[a] >= 0) {
            p.domain[a].set(static_cast<size_t>(forced[a]));
            continue;
        }
        match::UnaryProfile sp = match::unaryProfile(*s.gpus[a]);
        for (size_t u = 0; u < nd; ++u)
            if (usable[u] && match::unaryCompatible(sp, dstProfiles[u], options.checks))
                p.domain[a].set(u);
        if (p.domain[a].none())
            report.reasons.push_back(match::explainUnary(*s.gpus[a], usableNodes, options.checks));
    }
    if (!report.reasons.empty())
        return report;

    match::Solution sol = match::solve(p);
    report.searchNodes = sol.nodes;
    for (std::string& w : sol.warnings)
        report.warnings.push_back(std::move(w));
    if (!sol.found) {
        report.reasons = match::explainNoSolution(p);
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
    MatchReport report = matchTopologies(src, dst, options);
    if (report.matched)
        return report.mapping;
    std::string message = "no mapping of the checkpoint's GPUs onto this machine's GPUs";
    for (const std::string& r : report.reasons)
        message += ": " + r;
    return makeError(ErrorCode::NoMapping, "%s", message.c_str());
}

} // namespace hal
