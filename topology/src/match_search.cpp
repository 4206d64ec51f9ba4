// The complete search behind matchTopologies: backtracking over source GPUs with
//  - forward checking of the link requirements and of the CPU-node mapping,
//  - a bipartite-matching feasibility test (augmenting paths, warm-started) at every node,
//  - most-constrained-first variable order that finishes an XGMI hive before starting another,
//  - value symmetry: destination GPUs that are interchangeable (same candidates, same links to
//    everything else, same CPU links) are tried once,
//  - hive symmetry: two untouched destination hives that can be swapped wholesale are tried once,
//  - memoised failures where no open GPU is tied by a link rule to an assigned one (the rest of
//    the problem then depends only on which GPUs and CPU nodes are taken),
//  - a budget of steps shared with the diagnostics, so a crafted topology cannot make it run for
//    long: when the budget is spent the search stops and says so (never a wrong answer).
#include "match_model.h"

#include "base/result.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace topology::match {

using base::strFormat;

namespace {

// A window on the State's one array of ints.
struct IntSpan {
    int* p = nullptr;
    size_t n = 0;
    int& operator[](size_t i) { return p[i]; }
    const int& operator[](size_t i) const { return p[i]; }
    const int* begin() const { return p; }
    const int* end() const { return p + n; }
};

// The search state, copied at every node: two allocations (domains, ints) per copy.
struct State {
    std::vector<GpuSet> dom;
    GpuSet used;     // destination GPUs taken
    GpuSet assigned; // source GPUs assigned
    std::vector<int> ints;
    IntSpan assign;     // per source GPU: destination or -1
    IntSpan cpuMap;     // per source CPU node: destination CPU node or -1
    IntSpan cpuUsed;    // per destination CPU node: taken
    IntSpan matchOfVar; // the feasibility matching, both ways
    IntSpan varOfVal;

    State() = default;
    State(size_t ns, size_t nd, size_t srcCpus, size_t dstCpus)
        : dom(ns, GpuSet(nd)), used(nd), assigned(ns), ints(2 * ns + nd + srcCpus + dstCpus, -1) {
        bind(ns, nd, srcCpus, dstCpus);
        for (size_t c = 0; c < dstCpus; ++c)
            cpuUsed[c] = 0;
    }
    State(const State& o) : dom(o.dom), used(o.used), assigned(o.assigned), ints(o.ints) {
        bind(o.assign.n, o.varOfVal.n, o.cpuMap.n, o.cpuUsed.n);
    }
    State& operator=(const State& o) {
        dom = o.dom;
        used = o.used;
        assigned = o.assigned;
        ints = o.ints;
        bind(o.assign.n, o.varOfVal.n, o.cpuMap.n, o.cpuUsed.n);
        return *this;
    }

private:
    void bind(size_t ns, size_t nd, size_t srcCpus, size_t dstCpus) {
        int* p = ints.data();
        assign = {p, ns};
        matchOfVar = {p + ns, ns};
        varOfVal = {p + 2 * ns, nd};
        cpuMap = {p + 2 * ns + nd, srcCpus};
        cpuUsed = {p + 2 * ns + nd + srcCpus, dstCpus};
    }
};

using CpuPairs = std::vector<std::pair<int, int>>;

class Solver {
public:
    Solver(const Problem& p, Budget& budget)
        : p_(p), s_(*p.src), d_(*p.dst), ns_(s_.gpus.size()), nd_(d_.gpus.size()), budget_(budget) {
        cpuUsers_.assign(s_.cpus.size(), {});
        for (size_t b = 0; b < ns_; ++b)
            for (const CpuLink& l : s_.cpuLinks[b])
                cpuUsers_[static_cast<size_t>(l.cpu)].push_back(
                    {static_cast<int>(b), static_cast<int>(neededKind(l.kind, p_.checks))});
        nodeCost_ = 1 + ns_ * ((nd_ + 63) / 64) / 8;
        active_ = GpuSet(ns_);
        for (size_t a = 0; a < ns_; ++a)
            if (p_.active[a])
                active_.set(a);
        computeTwins();
    }

    Solution run() {
        Solution out;
        State st(ns_, nd_, s_.cpus.size(), d_.cpus.size());
        for (size_t a = 0; a < ns_; ++a)
            if (p_.active[a])
                st.dom[a] = p_.domain[a];

        // Forced entries are applied first; constraints between two forced GPUs are not enforced
        // (the user asked for them), constraints towards the others are.
        std::vector<size_t> forced;
        for (size_t a = 0; a < ns_; ++a)
            if (p_.active[a] && p_.forced[a] >= 0) {
                forced.push_back(a);
                setAssigned(st, a, static_cast<size_t>(p_.forced[a]));
            }
        for (size_t a : forced) {
            size_t A = static_cast<size_t>(st.assign[a]);
            if (p_.checks.numa) {
                std::vector<CpuPairs> options;
                cpuOptions(st, a, A, &options);
                if (budget_.exhausted)
                    return finish(out, false, st);
                if (options.empty())
                    out.warnings.push_back(strFormat(
                        "%s forced onto %s: its CPU (NUMA) grouping cannot be kept",
                        describeSrc(*s_.gpus[a]).c_str(), describeDst(*d_.gpus[A]).c_str()));
                else if (!applyCpu(st, options.front()))
                    return finish(out, false, st);
            }
            if (!forwardCheck(st, a, A))
                return finish(out, false, st);
        }
        if (!feasible(st))
            return finish(out, false, st);
        bool found = search(st);
        return finish(out, found, found ? result_ : st);
    }

private:
    Solution finish(Solution& out, bool found, const State& st) {
        out.found = found;
        out.exhausted = !found && budget_.exhausted;
        out.nodes = nodes_;
        if (found)
            out.assignment.assign(st.assign.begin(), st.assign.end());
        return out;
    }

    // Whether rows[u] and rows[v] agree outside positions u and v.
    static bool rowsMatch(const std::vector<GpuSet>& rows, size_t u, size_t v) {
        const GpuSet& a = rows[u];
        const GpuSet& b = rows[v];
        for (size_t w = 0; w < a.wordCount(); ++w) {
            uint64_t mask = ~0ull;
            if (u / 64 == w)
                mask &= ~(1ull << (u % 64));
            if (v / 64 == w)
                mask &= ~(1ull << (v % 64));
            if ((a.word(w) & mask) != (b.word(w) & mask))
                return false;
        }
        return true;
    }

    // Swapping u and v maps the destination's links onto themselves.
    bool linksSymmetric(size_t u, size_t v) const {
        for (size_t t = 0; t < kLinkTypes; ++t) {
            if (d_.out[t][u].test(v) != d_.out[t][v].test(u))
                return false;
            if (!rowsMatch(d_.out[t], u, v) || !rowsMatch(d_.in[t], u, v))
                return false;
        }
        return true;
    }

    // Twins: destination GPUs u, v such that swapping them maps the problem onto itself. Swaps
    // compose, so each GPU is compared with one representative of each class found so far.
    void computeTwins() {
        // Candidate columns: which source GPUs may use each destination GPU.
        std::vector<GpuSet> column(nd_, GpuSet(ns_));
        for (size_t a = 0; a < ns_; ++a)
            if (p_.active[a])
                GPUSET_FOR(u, p_.domain[a])
        column[u].set(a);
        twin_.assign(nd_, -1);
        std::vector<size_t> reps;
        for (size_t u = 0; u < nd_; ++u) {
            for (size_t r : reps)
                if (column[u] == column[r] &&
                    (!p_.checks.numa || d_.cpuLinks[u] == d_.cpuLinks[r]) && linksSymmetric(u, r)) {
                    twin_[u] = static_cast<int>(r);
                    break;
                }
            if (twin_[u] < 0) {
                twin_[u] = static_cast<int>(u);
                reps.push_back(u);
            }
        }
        computeComponentClasses(column);
    }

    // Destination XGMI components (hives) that can be swapped wholesale: the bijection pairing
    // their members in index order, identity elsewhere, preserves every link, candidate column
    // and CPU link.
    void computeComponentClasses(const std::vector<GpuSet>& column) {
        compOf_.assign(nd_, -1);
        posInComp_.assign(nd_, 0);
        comps_.clear();
        for (size_t u = 0; u < nd_; ++u) {
            if (compOf_[u] >= 0)
                continue;
            std::vector<size_t> members{u};
            compOf_[u] = static_cast<int>(comps_.size());
            for (size_t k = 0; k < members.size(); ++k) {
                GpuSet nb = d_.out[kXgmi][members[k]];
                nb |= d_.in[kXgmi][members[k]];
                GPUSET_FOR(x, nb)
                if (compOf_[x] < 0) {
                    compOf_[x] = compOf_[u];
                    members.push_back(x);
                }
            }
            std::sort(members.begin(), members.end());
            for (size_t i = 0; i < members.size(); ++i)
                posInComp_[members[i]] = i;
            comps_.push_back(members);
        }
        compClass_.assign(comps_.size(), -1);
        for (size_t c = 0; c < comps_.size(); ++c) {
            if (compClass_[c] >= 0)
                continue;
            compClass_[c] = static_cast<int>(c);
            if (comps_[c].size() < 2)
                continue; // single GPUs are covered by twins
            for (size_t e = c + 1; e < comps_.size(); ++e)
                if (compClass_[e] < 0 && swappable(comps_[c], comps_[e], column))
                    compClass_[e] = static_cast<int>(c);
        }
    }

    bool swappable(const std::vector<size_t>& a, const std::vector<size_t>& b,
                   const std::vector<GpuSet>& column) const {
        if (a.size() != b.size())
            return false;
        std::vector<size_t> phi(nd_);
        std::iota(phi.begin(), phi.end(), 0);
        for (size_t i = 0; i < a.size(); ++i) {
            phi[a[i]] = b[i];
            phi[b[i]] = a[i];
        }
        auto mapped = [&](const GpuSet& row) {
            GpuSet out(nd_);
            GPUSET_FOR(y, row)
            out.set(phi[y]);
            return out;
        };
        for (const std::vector<size_t>* side : {&a, &b})
            for (size_t x : *side) {
                size_t y = phi[x];
                if (!(column[x] == column[y]) ||
                    (p_.checks.numa && !(d_.cpuLinks[x] == d_.cpuLinks[y])))
                    return false;
                for (size_t t = 0; t < kLinkTypes; ++t)
                    if (!(mapped(d_.out[t][x]) == d_.out[t][y]) ||
                        !(mapped(d_.in[t][x]) == d_.in[t][y]))
                        return false;
            }
        return true;
    }

    bool compUnused(const State& st, size_t comp) const {
        for (size_t x : comps_[comp])
            if (st.used.test(x))
                return false;
        return true;
    }

    // Whether trying u after w (both candidates of the same source GPU) is redundant.
    bool equivalentValue(const State& st, size_t w, size_t u) const {
        if (twin_[w] == twin_[u])
            return true;
        size_t cw = static_cast<size_t>(compOf_[w]), cu = static_cast<size_t>(compOf_[u]);
        if (cw == cu || compClass_[cw] != compClass_[cu] || !compUnused(st, cw) ||
            !compUnused(st, cu))
            return false;
        return twin_[comps_[cw][posInComp_[u]]] == twin_[w];
    }

    void setAssigned(State& st, size_t a, size_t A) {
        st.assign[a] = static_cast<int>(A);
        st.assigned.set(a);
        st.used.set(A);
        int old = st.matchOfVar[a];
        if (old >= 0 && st.varOfVal[static_cast<size_t>(old)] == static_cast<int>(a))
            st.varOfVal[static_cast<size_t>(old)] = -1;
        int holder = st.varOfVal[A];
        if (holder >= 0 && holder != static_cast<int>(a))
            st.matchOfVar[static_cast<size_t>(holder)] = -1;
        st.matchOfVar[a] = static_cast<int>(A);
        st.varOfVal[A] = static_cast<int>(a);
    }

    bool open(const State& st, size_t b) const { return p_.active[b] && st.assign[b] < 0; }

    // The link rules of a (now on A) constrain its open partners; A leaves every domain.
    bool forwardCheck(State& st, size_t a, size_t A) {
        GpuSet openSet = active_;
        openSet.subtract(st.assigned);
        for (size_t c = 0; c < kLinkClasses; ++c) {
            if (p_.need[c].empty())
                continue;
            for (bool from : {false, true}) {
                GpuSet partners = from ? p_.needFrom[c][a] : p_.need[c][a];
                partners &= openSet;
                const GpuSet& allowed = from ? p_.allowFrom[c][A] : p_.allow[c][A];
                GPUSET_FOR(b, partners) {
                    st.dom[b] &= allowed;
                    if (st.dom[b].none())
                        return false;
                }
            }
        }
        GPUSET_FOR(b, openSet)
        if (st.dom[b].test(A)) {
            st.dom[b].reset(A);
            if (st.dom[b].none())
                return false;
        }
        return true;
    }

    // The ways to extend the CPU mapping so that a's CPU links are kept on A.
    void cpuOptions(const State& st, size_t a, size_t A, std::vector<CpuPairs>* out) {
        CpuPairs chosen;
        std::vector<int> map(st.cpuMap.begin(), st.cpuMap.end());
        std::vector<int> usedCpu(st.cpuUsed.begin(), st.cpuUsed.end());
        cpuOptionsRec(a, A, 0, map, usedCpu, chosen, out);
    }

    void cpuOptionsRec(size_t a, size_t A, size_t k, std::vector<int>& map,
                       std::vector<int>& usedCpu, CpuPairs& chosen, std::vector<CpuPairs>* out) {
        if (!budget_.take(1))
            return;
        const auto& links = s_.cpuLinks[a];
        if (k == links.size()) {
            out->push_back(chosen);
            return;
        }
        const CpuLink& l = links[k];
        CpuKind need = neededKind(l.kind, p_.checks);
        size_t c = static_cast<size_t>(l.cpu);
        for (const CpuLink& m : d_.cpuLinks[A]) {
            if ((m.kind & need) != need)
                continue;
            size_t C = static_cast<size_t>(m.cpu);
            if (map[c] >= 0) {
                if (map[c] == m.cpu) {
                    cpuOptionsRec(a, A, k + 1, map, usedCpu, chosen, out);
                    return;
                }
                continue;
            }
            if (usedCpu[C])
                continue;
            map[c] = m.cpu;
            usedCpu[C] = 1;
            chosen.push_back({l.cpu, m.cpu});
            cpuOptionsRec(a, A, k + 1, map, usedCpu, chosen, out);
            chosen.pop_back();
            usedCpu[C] = 0;
            map[c] = -1;
        }
    }

    bool applyCpu(State& st, const CpuPairs& pairs) {
        for (auto [c, C] : pairs) {
            st.cpuMap[static_cast<size_t>(c)] = C;
            st.cpuUsed[static_cast<size_t>(C)] = 1;
            for (auto [b, need] : cpuUsers_[static_cast<size_t>(c)]) {
                if (!open(st, static_cast<size_t>(b)))
                    continue;
                GpuSet& dom = st.dom[static_cast<size_t>(b)];
                dom &= d_.gpusServing[static_cast<size_t>(C)][static_cast<size_t>(need)];
                if (dom.none())
                    return false;
            }
        }
        return true;
    }

    // An augmenting path from source GPU v: a free value of its domain at once, else through the
    // holders of its values.
    bool augment(State& st, size_t v, GpuSet& visited, GpuSet& freeVals) {
        if (!budget_.take(1))
            return false;
        if (st.dom[v].intersects(freeVals)) {
            GpuSet take = st.dom[v];
            take &= freeVals;
            size_t u = take.first();
            freeVals.reset(u);
            st.varOfVal[u] = static_cast<int>(v);
            st.matchOfVar[v] = static_cast<int>(u);
            return true;
        }
        GPUSET_FOR(u, st.dom[v]) {
            if (visited.test(u))
                continue;
            visited.set(u);
            int holder = st.varOfVal[u];
            if (holder >= 0 && augment(st, static_cast<size_t>(holder), visited, freeVals)) {
                st.varOfVal[u] = static_cast<int>(v);
                st.matchOfVar[v] = static_cast<int>(u);
                return true;
            }
            if (budget_.exhausted)
                return false;
        }
        return false;
    }

    // Can every open source GPU still get a distinct destination from its domain?
    bool feasible(State& st) {
        std::vector<size_t> freeVars;
        for (size_t b = 0; b < ns_; ++b) {
            if (!open(st, b))
                continue;
            int m = st.matchOfVar[b];
            if (m >= 0 && (!st.dom[b].test(static_cast<size_t>(m)) ||
                           st.varOfVal[static_cast<size_t>(m)] != static_cast<int>(b))) {
                if (st.varOfVal[static_cast<size_t>(m)] == static_cast<int>(b))
                    st.varOfVal[static_cast<size_t>(m)] = -1;
                st.matchOfVar[b] = -1;
                m = -1;
            }
            if (m < 0)
                freeVars.push_back(b);
        }
        if (freeVars.empty())
            return true;
        GpuSet freeVals(nd_);
        for (size_t u = 0; u < nd_; ++u)
            if (st.varOfVal[u] < 0)
                freeVals.set(u);
        for (size_t v : freeVars) {
            GpuSet visited(nd_);
            if (!augment(st, v, visited, freeVals))
                return false;
        }
        return true;
    }

    bool boundary(const State& st) const {
        for (size_t b = 0; b < ns_; ++b)
            if (open(st, b) && p_.linked[b].intersects(st.assigned))
                return false;
        return true;
    }

    std::string memoKey(const State& st) const {
        std::string key;
        auto add = [&](uint64_t w) { key.append(reinterpret_cast<const char*>(&w), sizeof w); };
        for (size_t i = 0; i < st.assigned.wordCount(); ++i)
            add(st.assigned.word(i));
        for (size_t i = 0; i < st.used.wordCount(); ++i)
            add(st.used.word(i));
        for (int c : st.cpuMap)
            add(static_cast<uint64_t>(static_cast<int64_t>(c)));
        return key;
    }

    int pickVar(const State& st) const {
        int best = -1;
        int bestTie = -1;
        size_t bestSize = 0, bestDegree = 0;
        for (size_t b = 0; b < ns_; ++b) {
            if (!open(st, b))
                continue;
            // Hive peers of assigned GPUs first, then GPUs tied by other links, then the rest.
            int tie = p_.hive[b].intersects(st.assigned)     ? 2
                      : p_.linked[b].intersects(st.assigned) ? 1
                                                             : 0;
            size_t size = st.dom[b].count();
            size_t degree = p_.linked[b].count() + s_.cpuLinks[b].size();
            bool better =
                best < 0 || tie > bestTie ||
                (tie == bestTie && (size < bestSize || (size == bestSize && degree > bestDegree)));
            if (better) {
                best = static_cast<int>(b);
                bestTie = tie;
                bestSize = size;
                bestDegree = degree;
            }
        }
        return best;
    }

    bool search(State& st) {
        ++nodes_;
        if (!budget_.take(nodeCost_))
            return false;
        int picked = pickVar(st);
        if (picked < 0) {
            result_ = st;
            return true;
        }
        size_t a = static_cast<size_t>(picked);
        bool atBoundary = boundary(st);
        std::string key;
        if (atBoundary) {
            key = memoKey(st);
            if (failed_.count(key))
                return false;
        }
        // Candidates: the destination with the same gpu_id first (restoring on the same machine
        // keeps every GPU in place), then in destination order; one per class of twins.
        std::vector<size_t> order;
        GPUSET_FOR(u, st.dom[a])
        if (d_.gpus[u]->gpuId == s_.gpus[a]->gpuId)
            order.push_back(u);
        GPUSET_FOR(u, st.dom[a])
        if (d_.gpus[u]->gpuId != s_.gpus[a]->gpuId)
            order.push_back(u);
        std::vector<size_t> tried;
        for (size_t A : order) {
            bool redundant = false;
            for (size_t w : tried)
                if (equivalentValue(st, w, A)) {
                    redundant = true;
                    break;
                }
            if (redundant)
                continue;
            tried.push_back(A);
            std::vector<CpuPairs> options;
            if (p_.checks.numa)
                cpuOptions(st, a, A, &options);
            else
                options.push_back({});
            for (const CpuPairs& option : options) {
                State child = st;
                setAssigned(child, a, A);
                if (!applyCpu(child, option) || !forwardCheck(child, a, A) || !feasible(child))
                    continue;
                if (search(child))
                    return true;
                if (budget_.exhausted)
                    return false;
            }
            if (budget_.exhausted)
                return false;
        }
        if (atBoundary && failed_.size() < kMemoLimit)
            failed_.insert(std::move(key));
        return false;
    }

    static constexpr size_t kMemoLimit = 1u << 20;
    const Problem& p_;
    const Side& s_;
    const Side& d_;
    size_t ns_, nd_;
    Budget& budget_;
    uint64_t nodeCost_ = 1;
    GpuSet active_;
    std::vector<std::vector<std::pair<int, int>>> cpuUsers_;
    std::vector<int> twin_;
    std::vector<int> compOf_;
    std::vector<size_t> posInComp_;
    std::vector<std::vector<size_t>> comps_;
    std::vector<int> compClass_;
    std::unordered_set<std::string> failed_;
    State result_;
    uint64_t nodes_ = 0;
};

} // namespace

Solution solve(const Problem& problem, Budget& budget) {
    Solver solver(problem, budget);
    return solver.run();
}

} // namespace topology::match
