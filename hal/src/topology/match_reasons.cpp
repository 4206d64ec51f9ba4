// Diagnostics for a problem without solution: which source GPUs, which rule, which values, and
// which option relaxes it. Each reason comes from re-solving a relaxed or smaller problem.
#include "match_model.h"

#include "hal/result.h"

#include <algorithm>
#include <functional>

namespace hal::match {
namespace {

std::string srcList(const Side& s, const std::vector<size_t>& gpus) {
    std::string out;
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (i == 8) {
            out += strFormat(" and %zu more", gpus.size() - 8);
            break;
        }
        const Node& n = *s.gpus[gpus[i]];
        out += strFormat("%s%s (node %u)", i ? ", " : "", gpuIdHex(n.gpuId).c_str(), n.index);
    }
    return out;
}

// Maximum matching of `vars` into their domains; returns the vars left unmatched.
std::vector<size_t> unmatched(const std::vector<GpuSet>& dom, const std::vector<size_t>& vars,
                              size_t nd, std::vector<int>* owner) {
    owner->assign(nd, -1);
    std::function<bool(size_t, GpuSet&)> augment = [&](size_t v, GpuSet& seen) {
        GPUSET_FOR(u, dom[v]) {
            if (seen.test(u))
                continue;
            seen.set(u);
            int h = (*owner)[u];
            if (h < 0 || augment(static_cast<size_t>(h), seen)) {
                (*owner)[u] = static_cast<int>(v);
                return true;
            }
        }
        return false;
    };
    std::vector<size_t> left;
    for (size_t v : vars) {
        GpuSet seen(nd);
        if (!augment(v, seen))
            left.push_back(v);
    }
    return left;
}

// A Hall violator: source GPUs that together have fewer candidates than members.
std::string hallReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    size_t nd = d.gpus.size();
    std::vector<size_t> vars;
    for (size_t a = 0; a < s.gpus.size(); ++a)
        if (p.active[a])
            vars.push_back(a);
    std::vector<int> owner;
    std::vector<size_t> left = unmatched(p.domain, vars, nd, &owner);
    if (left.empty())
        return "";
    // Alternating reachability from one unmatched GPU gives the violating set.
    std::vector<size_t> set{left.front()};
    GpuSet values(nd);
    std::vector<char> inSet(s.gpus.size(), 0);
    inSet[left.front()] = 1;
    for (size_t k = 0; k < set.size(); ++k)
        GPUSET_FOR(u, p.domain[set[k]]) {
            if (values.test(u))
                continue;
            values.set(u);
            int h = owner[u];
            if (h >= 0 && !inSet[static_cast<size_t>(h)]) {
                inSet[static_cast<size_t>(h)] = 1;
                set.push_back(static_cast<size_t>(h));
            }
        }
    std::sort(set.begin(), set.end());
    std::string dsts;
    size_t shown = 0;
    GPUSET_FOR(u, values) {
        if (shown++ == 8) {
            dsts += ", ...";
            break;
        }
        dsts += strFormat("%s%s", shown > 1 ? ", " : "", gpuIdHex(d.gpus[u]->gpuId).c_str());
    }
    std::string why;
    for (size_t u = 0; u < nd; ++u) {
        if (values.test(u) || p.forced[set.front()] >= 0)
            continue;
        config::CompatibilityChecks all;
        std::vector<std::string> v = unaryViolations(*s.gpus[set.front()], *d.gpus[u], all);
        if (!v.empty()) {
            why = strFormat("; e.g. %s is ruled out for %s: %s",
                            describeDst(*d.gpus[u]).c_str(),
                            gpuIdHex(s.gpus[set.front()]->gpuId).c_str(), v.front().c_str());
            break;
        }
    }
    return strFormat("source GPUs %s need %zu distinct destination GPUs but only %zu pass the "
                     "checks for them (%s)%s",
                     srcList(s, set).c_str(), set.size(), values.count(), dsts.c_str(), why.c_str());
}

std::vector<std::vector<size_t>> xgmiComponents(const Problem& p) {
    const Side& s = *p.src;
    size_t n = s.gpus.size();
    std::vector<int> comp(n, -1);
    std::vector<std::vector<size_t>> out;
    for (size_t a = 0; a < n; ++a) {
        if (!p.active[a] || comp[a] >= 0)
            continue;
        std::vector<size_t> members{a};
        comp[a] = static_cast<int>(out.size());
        for (size_t k = 0; k < members.size(); ++k) {
            GpuSet nb = s.xgmiOut[members[k]];
            nb |= s.xgmiIn[members[k]];
            GPUSET_FOR(b, nb)
                if (p.active[b] && comp[b] < 0) {
                    comp[b] = comp[a];
                    members.push_back(b);
                }
        }
        std::sort(members.begin(), members.end());
        out.push_back(members);
    }
    return out;
}

std::string numaReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    size_t nd = d.gpus.size();
    std::string hint = "; set KFD_NUMA_CHECK=0 or numa-check=false to allow";
    // A CPU group that no single destination CPU node can hold.
    for (size_t c = 0; c < s.cpus.size(); ++c) {
        std::vector<size_t> group;
        for (size_t a = 0; a < s.gpus.size(); ++a)
            if (p.active[a])
                for (const CpuLink& l : s.cpuLinks[a])
                    if (static_cast<size_t>(l.cpu) == c)
                        group.push_back(a);
        if (group.empty())
            continue;
        size_t best = 0;
        for (size_t C = 0; C < d.cpus.size(); ++C) {
            std::vector<GpuSet> dom = p.domain;
            for (size_t a : group)
                for (const CpuLink& l : s.cpuLinks[a])
                    if (static_cast<size_t>(l.cpu) == c)
                        dom[a] &= d.gpusServing[C][(l.xgmi ? 1 : 0) | (l.bidir ? 2 : 0)];
            std::vector<int> owner;
            best = std::max(best, group.size() - unmatched(dom, group, nd, &owner).size());
        }
        if (best < group.size())
            return strFormat("source GPUs %s share CPU node %u; no destination CPU node has %zu "
                             "compatible GPUs attached (at most %zu)%s",
                             srcList(s, group).c_str(), s.cpus[c]->index, group.size(), best,
                             hint.c_str());
    }
    std::vector<size_t> all;
    for (size_t a = 0; a < s.gpus.size(); ++a)
        if (p.active[a] && !s.cpuLinks[a].empty())
            all.push_back(a);
    return strFormat("source GPUs %s are attached to %zu CPU node(s); no assignment keeps GPUs that "
                     "share a CPU node together on one destination CPU node and GPUs of different "
                     "CPU nodes apart (the destination has %zu CPU node(s) with GPUs)%s",
                     srcList(s, all).c_str(), s.cpus.size(), d.cpus.size(), hint.c_str());
}

} // namespace

std::vector<std::string> explainNoSolution(const Problem& p) {
    std::vector<std::string> out;
    bool forced = std::any_of(p.forced.begin(), p.forced.end(), [](int f) { return f >= 0; });
    std::string forcedNote = forced ? " (with the device-map entries applied)" : "";
    std::string hall = hallReason(p);
    if (!hall.empty()) {
        out.push_back(hall + forcedNote);
        return out;
    }
    Problem relaxed = p;
    relaxed.numa = false;
    if (p.numa && solve(relaxed).found) {
        out.push_back(numaReason(p) + forcedNote);
        return out;
    }
    const Side& s = *p.src;
    std::vector<std::vector<size_t>> comps = xgmiComponents(p);
    bool blamed = false;
    for (const std::vector<size_t>& comp : comps) {
        if (comp.size() < 2)
            continue;
        Problem one = relaxed;
        std::fill(one.active.begin(), one.active.end(), false);
        for (size_t a : comp)
            one.active[a] = true;
        if (solve(one).found)
            continue;
        blamed = true;
        size_t maxDeg = 0;
        for (size_t a : comp)
            maxDeg = std::max(maxDeg, s.xgmiOut[a].count());
        std::vector<size_t> peers(comp.begin() + 1, comp.end());
        out.push_back(strFormat(
            "%s and its XGMI peers %s form a hive of %zu GPUs (up to %zu XGMI links each); no "
            "set of compatible destination GPUs is linked the same way (an XGMI link cannot become "
            "PCIe and a two-way link cannot become one-way; no option relaxes this, a device-map "
            "or force-single-gpu-restore overrides it)%s",
            describeSrc(*s.gpus[comp.front()]).c_str(), srcList(s, peers).c_str(), comp.size(),
            maxDeg, forcedNote.c_str()));
    }
    if (blamed)
        return out;
    std::vector<size_t> hiveHeads;
    for (const std::vector<size_t>& comp : comps)
        if (comp.size() > 1)
            hiveHeads.push_back(comp.front());
    Problem noXgmi = relaxed;
    noXgmi.xgmi = false;
    if (!hiveHeads.empty() && solve(noXgmi).found) {
        out.push_back(strFormat("the source XGMI hives led by %s fit one at a time but not all "
                                "together: the destination lacks enough XGMI-linked compatible GPUs "
                                "for all of them%s",
                                srcList(s, hiveHeads).c_str(), forcedNote.c_str()));
        return out;
    }
    std::vector<size_t> all;
    for (size_t a = 0; a < s.gpus.size(); ++a)
        if (p.active[a])
            all.push_back(a);
    out.push_back(strFormat("source GPUs %s cannot all be placed together under the XGMI and NUMA "
                            "rules%s%s",
                            srcList(s, all).c_str(),
                            p.numa ? "; KFD_NUMA_CHECK=0 / numa-check=false may help" : "",
                            forcedNote.c_str()));
    return out;
}

} // namespace hal::match
