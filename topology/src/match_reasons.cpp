// Diagnostics for a problem without solution: which source GPUs, which rule, which values, which
// options govern it, and which relaxations would allow a mapping. Every claim about an option is
// checked by solving the problem with that option off, under the same budget as the search.
#include "match_model.h"

#include "base/result.h"

#include <algorithm>
#include <functional>

namespace topology::match {

using base::strFormat;

namespace {

using Flag = bool settings::CompatibilityChecks::*;
using C = settings::CompatibilityChecks;

std::vector<size_t> activeGpus(const Problem& p) {
    std::vector<size_t> out;
    for (size_t a = 0; a < p.src->gpus.size(); ++a)
        if (p.active[a])
            out.push_back(a);
    return out;
}

std::string dstIds(const Side& d, const GpuSet& set) {
    std::string out;
    size_t shown = 0;
    GPUSET_FOR(u, set) {
        if (shown++ == 8) {
            out += ", ...";
            break;
        }
        out += strFormat("%s%s", shown > 1 ? ", " : "", gpuIdHex(d.gpus[u]->gpuId).c_str());
    }
    return out.empty() ? "none" : out;
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

// A Hall violator of `dom`: source GPUs that together have fewer candidates than members, and
// those candidates. Empty when every active GPU can get a distinct candidate.
std::vector<size_t> hallSet(const Problem& p, const std::vector<GpuSet>& dom, GpuSet* values) {
    size_t nd = p.dst->gpus.size();
    std::vector<int> owner;
    std::vector<size_t> left = unmatched(dom, activeGpus(p), nd, &owner);
    *values = GpuSet(nd);
    if (left.empty())
        return {};
    // Alternating reachability from one unmatched GPU gives the violating set.
    std::vector<size_t> set{left.front()};
    std::vector<char> inSet(p.src->gpus.size(), 0);
    inSet[left.front()] = 1;
    for (size_t k = 0; k < set.size(); ++k)
        GPUSET_FOR(u, dom[set[k]]) {
            if (values->test(u))
                continue;
            values->set(u);
            int h = owner[u];
            if (h >= 0 && !inSet[static_cast<size_t>(h)]) {
                inSet[static_cast<size_t>(h)] = 1;
                set.push_back(static_cast<size_t>(h));
            }
        }
    std::sort(set.begin(), set.end());
    return set;
}

Reason hallReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    GpuSet values;
    std::vector<size_t> set = hallSet(p, p.domain, &values);
    if (set.empty())
        return {};
    // The rules that keep the other usable destination GPUs away from these source GPUs.
    // The example shown is one an option could change, when there is one.
    Reason r;
    std::string why, fixedWhy;
    for (size_t a : set) {
        if (p.forced[a] >= 0)
            continue;
        const UnaryProfile& sp = unaryProfile(s, a);
        for (size_t u = 0; u < d.gpus.size(); ++u) {
            if (values.test(u) || !p.usable[u])
                continue;
            std::vector<Flag> options = unaryBreakOptions(sp, unaryProfile(d, u), p.checks);
            for (Flag f : options)
                addOption(r.options, f);
            std::string& slot = options.empty() ? fixedWhy : why;
            if (slot.empty()) {
                std::vector<std::string> v = unaryViolations(s, a, d, u, p.checks);
                if (!v.empty())
                    slot = strFormat("; e.g. %s is ruled out for %s: %s",
                                     describeDst(*d.gpus[u]).c_str(),
                                     gpuIdHex(s.gpus[a]->gpuId).c_str(), v.front().c_str());
            }
        }
    }
    if (why.empty())
        why = fixedWhy;
    r.text = strFormat("source GPUs %s need %zu distinct destination GPUs but only %zu pass the "
                       "checks for them (%s)%s",
                       gpuList(s, set).c_str(), set.size(), values.count(),
                       dstIds(d, values).c_str(), why.c_str());
    return r;
}

Reason numaReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    size_t nd = d.gpus.size();
    // A CPU group that no single destination CPU node can hold.
    for (size_t c = 0; c < s.cpus.size(); ++c) {
        std::vector<size_t> group;
        for (size_t a : activeGpus(p))
            for (const CpuLink& l : s.cpuLinks[a])
                if (static_cast<size_t>(l.cpu) == c &&
                    std::find(group.begin(), group.end(), a) == group.end())
                    group.push_back(a);
        if (group.empty())
            continue;
        size_t best = 0;
        for (size_t C = 0; C < d.cpus.size(); ++C) {
            std::vector<GpuSet> dom = p.domain;
            for (size_t a : group)
                for (const CpuLink& l : s.cpuLinks[a])
                    if (static_cast<size_t>(l.cpu) == c)
                        dom[a] &= d.gpusServing[C][neededKind(l.kind, p.checks)];
            std::vector<int> owner;
            best = std::max(best, group.size() - unmatched(dom, group, nd, &owner).size());
        }
        if (best < group.size())
            return {strFormat("source GPUs %s share CPU node %u; no destination CPU node has %zu "
                              "compatible GPUs attached (at most %zu; numa-check)",
                              gpuList(s, group).c_str(), s.cpus[c]->index, group.size(), best),
                    {&C::numa}};
    }
    std::vector<size_t> all;
    for (size_t a : activeGpus(p))
        if (!s.cpuLinks[a].empty())
            all.push_back(a);
    return {strFormat("source GPUs %s are attached to %zu CPU node(s); no assignment keeps GPUs "
                      "that share a CPU node together on one destination CPU node and GPUs of "
                      "different CPU nodes apart (the destination has %zu CPU node(s) with GPUs; "
                      "numa-check)",
                      gpuList(s, all).c_str(), s.cpus.size(), d.cpus.size()),
            {&C::numa}};
}

Reason largeBarReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    std::vector<size_t> srcLarge;
    for (size_t a : activeGpus(p))
        if ((unaryProfile(s, a).cpuServes >> kKindTwoWay) & 1)
            srcLarge.push_back(a);
    GpuSet dstLarge(d.gpus.size());
    for (size_t u = 0; u < d.gpus.size(); ++u)
        if (p.usable[u] && ((cpuServes(d, u) >> kKindTwoWay) & 1))
            dstLarge.set(u);
    return {strFormat("source GPUs %s have large BAR (a two-way link with their CPU node); the "
                      "destination GPUs with large BAR (%s) cannot take them all while the other "
                      "rules hold%s (large-bar-check)",
                      gpuList(s, srcLarge).c_str(), dstIds(d, dstLarge).c_str(),
                      p.checks.numa
                          ? ", a GPU's large BAR being kept towards the CPU node its group "
                            "maps to"
                          : ""),
            {&C::largeBar}};
}

// Components of the source GPUs under `edges` (symmetric rows), active ones only.
std::vector<std::vector<size_t>> components(const Problem& p, const std::vector<GpuSet>& edges) {
    size_t n = p.src->gpus.size();
    std::vector<int> comp(n, -1);
    std::vector<std::vector<size_t>> out;
    for (size_t a : activeGpus(p)) {
        if (comp[a] >= 0)
            continue;
        std::vector<size_t> members{a};
        comp[a] = static_cast<int>(out.size());
        for (size_t k = 0; k < members.size(); ++k)
            GPUSET_FOR(b, edges[members[k]])
        if (p.active[b] && comp[b] < 0) {
            comp[b] = comp[a];
            members.push_back(b);
        }
        std::sort(members.begin(), members.end());
        out.push_back(members);
    }
    return out;
}

// The first component (of two or more GPUs) that cannot be placed on its own; empty when each
// can. *gaveUp when the budget ran out.
std::vector<size_t> failingAlone(const Problem& p, const std::vector<GpuSet>& edges, Budget& budget,
                                 bool* gaveUp, std::vector<std::vector<size_t>>* comps) {
    *comps = components(p, edges);
    for (const std::vector<size_t>& comp : *comps) {
        if (comp.size() < 2)
            continue;
        Problem one = p;
        std::fill(one.active.begin(), one.active.end(), false);
        for (size_t a : comp)
            one.active[a] = true;
        Solution sol = solve(one, budget);
        if (sol.exhausted) {
            *gaveUp = true;
            return {};
        }
        if (!sol.found)
            return comp;
    }
    return {};
}

Reason xgmiReason(const Problem& p, Budget& budget, bool* gaveUp) {
    const Side& s = *p.src;
    std::vector<std::vector<size_t>> hives;
    std::vector<size_t> comp = failingAlone(p, p.hive, budget, gaveUp, &hives);
    if (!comp.empty()) {
        size_t maxDeg = 0;
        for (size_t a : comp)
            maxDeg = std::max(maxDeg, s.out[kXgmi][a].count());
        std::vector<size_t> peers(comp.begin() + 1, comp.end());
        return {strFormat("%s and its XGMI peers %s form a hive of %zu GPUs (up to %zu XGMI links "
                          "each); no set of compatible destination GPUs is linked the same way (an "
                          "XGMI link must stay XGMI; xgmi-link-check)",
                          describeSrc(*s.gpus[comp.front()]).c_str(), gpuList(s, peers).c_str(),
                          comp.size(), maxDeg),
                {&C::xgmiLink}};
    }
    std::vector<size_t> heads;
    for (const std::vector<size_t>& h : hives)
        if (h.size() > 1)
            heads.push_back(h.front());
    return {strFormat("the source XGMI hives led by %s fit one at a time but not all together: "
                      "the destination lacks enough XGMI-linked compatible GPUs for all of them "
                      "(xgmi-link-check)",
                      gpuList(s, heads).c_str()),
            {&C::xgmiLink}};
}

const char* classWords(size_t cls, bool from) {
    static const char* const to[kLinkClasses] = {"peer-to-peer links to", "XGMI links to",
                                                 "two-way peer-to-peer links with",
                                                 "two-way XGMI links with"};
    static const char* const fromWords[kLinkClasses] = {
        "peer-to-peer links from", "XGMI links from", "two-way peer-to-peer links with",
        "two-way XGMI links with"};
    return from ? fromWords[cls] : to[cls];
}

std::vector<Flag> classOptions(size_t cls) {
    if (cls == 0 || cls == 2)
        return {&C::peerLink};
    if (cls == 1)
        return {&C::xgmiLink};
    return {&C::peerLink, &C::xgmiLink};
}

// A source GPU with more links of some class than its candidates can offer, in a group that
// needs more such destination GPUs than there are (a Hall violation of the degree-filtered
// domains).
Reason degreeReason(const Problem& p) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    std::vector<GpuSet> dom = p.domain;
    // Per source GPU, the class and direction that removed the most candidates.
    std::vector<std::pair<size_t, bool>> worst(s.gpus.size(), {kLinkClasses, false});
    for (size_t a : activeGpus(p)) {
        if (p.forced[a] >= 0)
            continue;
        size_t removedMost = 0;
        for (size_t c = 0; c < kLinkClasses; ++c) {
            if (p.need[c].empty())
                continue;
            for (bool from : {false, true}) {
                size_t want = (from ? p.needFrom[c][a] : p.need[c][a]).count();
                if (want == 0)
                    continue;
                size_t removed = 0;
                GPUSET_FOR(u, p.domain[a])
                if ((from ? p.allowFrom[c][u] : p.allow[c][u]).count() < want) {
                    dom[a].reset(u);
                    ++removed;
                }
                if (removed > removedMost) {
                    removedMost = removed;
                    worst[a] = {c, from};
                }
            }
        }
    }
    GpuSet values;
    std::vector<size_t> set = hallSet(p, dom, &values);
    if (set.empty())
        return {};
    size_t example = set.front();
    for (size_t a : set)
        if (worst[a].first < kLinkClasses) {
            example = a;
            break;
        }
    auto [cls, from] = worst[example];
    if (cls == kLinkClasses)
        return {};
    size_t want = (from ? p.needFrom[cls][example] : p.need[cls][example]).count();
    std::string options = cls == 1   ? "xgmi-link-check"
                          : cls == 3 ? "peer-link-check, xgmi-link-check"
                                     : "peer-link-check";
    if (cls & 2)
        options = "a link is two-way when one of its type comes back; " + options;
    if (set.size() == 1) {
        size_t best = 0;
        GPUSET_FOR(u, p.domain[example])
        best = std::max(best, (from ? p.allowFrom[cls][u] : p.allow[cls][u]).count());
        return {strFormat("%s has %s %zu GPU%s, but no destination GPU that passes the other "
                          "checks has as many (the most is %zu; %s)",
                          describeSrc(*s.gpus[example]).c_str(), classWords(cls, from), want,
                          want == 1 ? "" : "s", best, options.c_str()),
                classOptions(cls)};
    }
    return {
        strFormat("source GPUs %s need %zu distinct destination GPUs with as many links as they "
                  "have, but only %zu compatible destination GPUs have them (%s): e.g. %s has "
                  "%s %zu GPU%s (%s)",
                  gpuList(s, set).c_str(), set.size(), values.count(), dstIds(d, values).c_str(),
                  describeSrc(*s.gpus[example]).c_str(), classWords(cls, from), want,
                  want == 1 ? "" : "s", options.c_str()),
        classOptions(cls)};
}

Reason p2pReason(const Problem& p, Budget& budget, bool* gaveUp) {
    Reason r = degreeReason(p);
    if (!r.text.empty())
        return r;
    const Side& s = *p.src;
    std::vector<std::vector<size_t>> comps;
    std::vector<size_t> comp = failingAlone(p, p.linked, budget, gaveUp, &comps);
    if (comp.empty())
        comp = activeGpus(p);
    size_t links = 0, twoWay = 0;
    for (size_t a : comp)
        for (size_t c = 0; c < kLinkClasses; ++c)
            if (!p.need[c].empty()) {
                links += p.need[c][a].count();
                if (c & 2)
                    twoWay += p.need[c][a].count();
            }
    return {strFormat("source GPUs %s are linked peer-to-peer (%zu links, %zu of them in two-way "
                      "pairs); no set of compatible destination GPUs is linked the same way "
                      "(a link in each direction the source had, two-way where it was two-way; "
                      "peer-link-check)",
                      gpuList(s, comp).c_str(), links, twoWay),
            {&C::peerLink}};
}

// The structural rules in force that have something to hold in this problem.
std::vector<Flag> structuralInForce(const Problem& p) {
    const Side& s = *p.src;
    bool cpu = false, large = false, xgmi = false, p2p = false;
    for (size_t a : activeGpus(p)) {
        cpu |= !s.cpuLinks[a].empty();
        for (const CpuLink& l : s.cpuLinks[a]) {
            large |= (l.kind & kKindTwoWay) != 0;
            xgmi |= (l.kind & kKindXgmi) != 0;
        }
        xgmi |= s.out[kXgmi][a].any();
        for (size_t c = 0; c < kLinkClasses; ++c)
            p2p |= (c == 0 || c >= 2) && !p.need[c].empty() && p.need[c][a].any();
    }
    std::vector<Flag> out;
    if (p.checks.numa && cpu)
        out.push_back(&C::numa);
    if (p.checks.largeBar && large)
        out.push_back(&C::largeBar);
    if (p.checks.xgmiLink && xgmi)
        out.push_back(&C::xgmiLink);
    if (p.checks.peerLink && p2p)
        out.push_back(&C::peerLink);
    return out;
}

// One round of explanation: the reasons this problem fails, each tagged with its options.
std::vector<Reason> explainOnce(const Problem& p, const ProblemBuilder& rebuild, Budget& budget,
                                bool* gaveUp) {
    const Side& s = *p.src;
    const Side& d = *p.dst;
    std::vector<Reason> out;
    std::vector<size_t> usable;
    for (size_t u = 0; u < d.gpus.size(); ++u)
        if (p.usable[u])
            usable.push_back(u);
    for (size_t a : activeGpus(p))
        if (p.domain[a].none())
            out.push_back(explainUnary(s, a, d, usable, p.checks));
    if (!out.empty())
        return out;
    Reason hall = hallReason(p);
    if (!hall.text.empty())
        return {hall};

    std::vector<Flag> inForce = structuralInForce(p);
    std::vector<Flag> blocking;
    for (Flag f : inForce) {
        settings::CompatibilityChecks relaxed = p.checks;
        relaxed.*f = false;
        Solution sol = solve(rebuild(relaxed), budget);
        if (sol.exhausted) {
            *gaveUp = true;
            return {};
        }
        if (sol.found)
            blocking.push_back(f);
    }
    for (Flag f : blocking) {
        if (f == &C::numa)
            out.push_back(numaReason(p));
        else if (f == &C::largeBar)
            out.push_back(largeBarReason(p));
        else if (f == &C::xgmiLink)
            out.push_back(xgmiReason(p, budget, gaveUp));
        else
            out.push_back(p2pReason(p, budget, gaveUp));
    }
    if (!out.empty())
        return out;
    Reason degree = degreeReason(p);
    if (!degree.text.empty())
        return {degree};
    std::vector<std::vector<size_t>> comps;
    std::vector<size_t> comp = failingAlone(p, p.linked, budget, gaveUp, &comps);
    if (*gaveUp)
        return {};
    if (comp.empty())
        comp = activeGpus(p);
    std::string names;
    for (Flag f : inForce)
        names += std::string(names.empty() ? "" : ", ") + relaxationOf(f).option;
    return {{strFormat("source GPUs %s cannot be placed together: no single rule is to blame, the "
                       "rules in force block it together (%s)",
                       gpuList(s, comp).c_str(), names.empty() ? "none" : names.c_str()),
             inForce}};
}

std::string optionList(const std::vector<Flag>& flags) {
    std::string out;
    for (size_t i = 0; i < flags.size(); ++i)
        out += std::string(i == 0                  ? ""
                           : i + 1 == flags.size() ? " and "
                                                   : ", ") +
               relaxSpelling(relaxationOf(flags[i]));
    return out;
}

} // namespace

std::string budgetExhaustedReason(uint64_t budget) {
    return strFormat("the GPU matcher gave up after %llu search steps without deciding whether a "
                     "mapping exists: the two topologies are unusually ambiguous (or crafted); "
                     "name the destination of some source GPUs in device-map "
                     "(CRIU_AMDGPU_DEVICE_MAP) to narrow the search",
                     (unsigned long long)budget);
}

std::vector<std::string> explainFailure(const Problem& problem, const ProblemBuilder& rebuild,
                                        Budget& budget) {
    std::vector<std::string> lines;
    const std::string gaveUp = strFormat(
        "no mapping exists under the rules in force, but finding out which rules block it ran out "
        "of its %llu search steps (the topologies are unusually ambiguous, or crafted)",
        (unsigned long long)budget.left);
    Problem cur = problem;
    std::vector<Flag> relaxed;
    for (size_t round = 0; round <= relaxations().size(); ++round) {
        bool spent = false;
        std::vector<Reason> reasons = explainOnce(cur, rebuild, budget, &spent);
        if (spent || budget.exhausted) {
            lines.push_back(gaveUp);
            break;
        }
        std::string prefix = relaxed.empty() ? "" : "with " + optionList(relaxed) + " as well: ";
        std::vector<std::pair<Flag, int>> verdicts; // 1 allows a mapping, 0 does not, -1 unknown
        std::vector<Flag> options;
        for (const Reason& r : reasons) {
            std::string line = prefix + r.text;
            for (Flag f : r.options) {
                addOption(options, f);
                auto known = std::find_if(verdicts.begin(), verdicts.end(),
                                          [&](const auto& v) { return v.first == f; });
                if (known == verdicts.end()) {
                    settings::CompatibilityChecks one = cur.checks;
                    one.*f = false;
                    Solution sol = solve(rebuild(one), budget);
                    verdicts.push_back({f, sol.found ? 1 : sol.exhausted ? -1 : 0});
                    known = verdicts.end() - 1;
                }
                int verdict = known->second;
                const Relaxation& rel = relaxationOf(f);
                if (verdict == 1)
                    line += strFormat("; setting %s%s would allow a mapping, at this cost: %s",
                                      relaxSpelling(rel).c_str(), relaxed.empty() ? "" : " as well",
                                      rel.cost);
                else if (verdict == 0)
                    line += strFormat("; %s governs this, but relaxing it%s would not be enough",
                                      rel.option, relaxed.empty() ? " alone" : " too");
                else
                    line += strFormat("; whether relaxing %s would allow a mapping is unknown (the "
                                      "search budget is spent)",
                                      rel.option);
            }
            lines.push_back(line);
        }
        if (options.empty() || budget.exhausted)
            break;
        settings::CompatibilityChecks next = cur.checks;
        for (Flag f : options)
            next.*f = false;
        Problem after = rebuild(next);
        Solution sol = solve(after, budget);
        for (Flag f : options)
            addOption(relaxed, f);
        if (sol.found) {
            if (relaxed.size() > 1) {
                std::string costs;
                for (Flag f : relaxed)
                    costs += strFormat("%s%s: %s", costs.empty() ? "" : "; ",
                                       relaxationOf(f).option, relaxationOf(f).cost);
                lines.push_back(strFormat("setting %s together would allow a mapping, at these "
                                          "costs: %s",
                                          optionList(relaxed).c_str(), costs.c_str()));
            }
            break;
        }
        if (sol.exhausted) {
            lines.push_back(gaveUp);
            break;
        }
        cur = std::move(after);
    }
    return lines;
}

} // namespace topology::match
