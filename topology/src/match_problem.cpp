// The rules in force turned into a constraint problem: per-GPU rules into domains, link rules into
// requirement classes with the destination pairs that satisfy each class.
#include "match_model.h"

#include <algorithm>

namespace topology::match {
namespace {

constexpr size_t kClassXgmiOnly = 1, kClassTwoWay = 2;

// The class a source link a->b of type t asks for, or -1 when no rule in force covers it.
int linkClass(const Side& s, size_t a, size_t b, size_t t, const settings::CompatibilityChecks& c) {
    bool xgmiOnly = c.xgmiLink && t == kXgmi;
    if (!xgmiOnly && !c.peerLink)
        return -1;
    bool twoWay = c.peerLink && s.out[t][b].test(a);
    return static_cast<int>((xgmiOnly ? kClassXgmiOnly : 0) | (twoWay ? kClassTwoWay : 0));
}

// Destination pairs (A, B) satisfying class `cls`: A->B of an allowed type, and for a two-way
// class B->A of the same type.
void allowedPairs(const Side& d, size_t cls, std::vector<GpuSet>* allow,
                  std::vector<GpuSet>* allowFrom) {
    size_t n = d.gpus.size();
    allow->assign(n, GpuSet(n));
    allowFrom->assign(n, GpuSet(n));
    for (size_t t = (cls & kClassXgmiOnly) ? kXgmi : kPcie; t < kLinkTypes; ++t)
        for (size_t A = 0; A < n; ++A) {
            GpuSet row = d.out[t][A];
            GpuSet col = d.in[t][A];
            if (cls & kClassTwoWay) {
                row &= d.in[t][A];
                col &= d.out[t][A];
            }
            (*allow)[A] |= row;
            (*allowFrom)[A] |= col;
        }
}

} // namespace

Problem buildProblem(const Side& s, const Side& d, const settings::CompatibilityChecks& checks,
                     const std::vector<int>& forced, const std::vector<bool>& usable) {
    size_t ns = s.gpus.size(), nd = d.gpus.size();
    Problem p;
    p.src = &s;
    p.dst = &d;
    p.checks = checks;
    p.forced = forced;
    p.usable = usable;
    p.active.assign(ns, true);
    p.domain.assign(ns, GpuSet(nd));
    // GPUs of one model have one profile: compare each source profile with each destination
    // profile once.
    std::vector<size_t> dstReps;
    std::vector<GpuSet> dstMembers;
    for (size_t u = 0; u < nd; ++u) {
        if (!usable[u])
            continue;
        size_t k = 0;
        while (k < dstReps.size() && !(unaryProfile(d, dstReps[k]) == unaryProfile(d, u)))
            ++k;
        if (k == dstReps.size()) {
            dstReps.push_back(u);
            dstMembers.emplace_back(nd);
        }
        dstMembers[k].set(u);
    }
    std::vector<std::pair<size_t, GpuSet>> srcDomains; // source representative, its domain
    for (size_t a = 0; a < ns; ++a) {
        if (forced[a] >= 0) {
            p.domain[a].set(static_cast<size_t>(forced[a]));
            continue;
        }
        const UnaryProfile& sp = unaryProfile(s, a);
        auto known = std::find_if(srcDomains.begin(), srcDomains.end(),
                                  [&](const auto& r) { return unaryProfile(s, r.first) == sp; });
        if (known == srcDomains.end()) {
            GpuSet dom(nd);
            for (size_t k = 0; k < dstReps.size(); ++k)
                if (unaryCompatible(sp, unaryProfile(d, dstReps[k]), checks))
                    dom |= dstMembers[k];
            srcDomains.push_back({a, dom});
            known = srcDomains.end() - 1;
        }
        p.domain[a] = known->second;
    }

    p.linked.assign(ns, GpuSet(ns));
    p.hive.assign(ns, GpuSet(ns));
    bool used[kLinkClasses] = {};
    for (size_t c = 0; c < kLinkClasses; ++c) {
        p.need[c].assign(ns, GpuSet(ns));
        p.needFrom[c].assign(ns, GpuSet(ns));
    }
    for (size_t a = 0; a < ns; ++a) {
        p.hive[a] |= s.out[kXgmi][a];
        p.hive[a] |= s.in[kXgmi][a];
        for (size_t t = 0; t < kLinkTypes; ++t)
            GPUSET_FOR(b, s.out[t][a]) {
                int cls = linkClass(s, a, b, t, checks);
                if (cls < 0)
                    continue;
                used[cls] = true;
                p.need[cls][a].set(b);
                p.needFrom[cls][b].set(a);
                p.linked[a].set(b);
                p.linked[b].set(a);
            }
    }
    for (size_t c = 0; c < kLinkClasses; ++c)
        if (used[c])
            allowedPairs(d, c, &p.allow[c], &p.allowFrom[c]);
        else
            p.need[c].clear(), p.needFrom[c].clear();
    return p;
}

} // namespace topology::match
