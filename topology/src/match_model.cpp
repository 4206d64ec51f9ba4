#include "match_model.h"

#include "base/result.h"

#include <algorithm>

namespace topology::match {

using base::strFormat;

namespace {

// The rules' index of a link type, or -1 for a type they ignore.
int linkIndex(uint32_t type) {
    if (type == static_cast<uint32_t>(LinkType::PciExpress))
        return kPcie;
    if (type == static_cast<uint32_t>(LinkType::Xgmi))
        return kXgmi;
    return -1;
}

// Sysfs node index -> position: a table when the indices are dense (as KFD numbers them), else a
// binary search over the sorted indices (a crafted image may use any 32-bit numbers).
class Positions {
public:
    void add(uint32_t index, int pos) { entries_.push_back({index, pos}); }
    void seal() {
        uint32_t top = 0;
        for (const auto& e : entries_)
            top = std::max(top, e.first);
        if (top < 4 * entries_.size() + 64) {
            table_.assign(static_cast<size_t>(top) + 1, -1);
            for (const auto& [index, pos] : entries_)
                table_[index] = pos;
            return;
        }
        std::sort(entries_.begin(), entries_.end());
    }
    int find(uint32_t index) const {
        if (!table_.empty())
            return index < table_.size() ? table_[index] : -1;
        auto it =
            std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(index, INT32_MIN));
        return it != entries_.end() && it->first == index ? it->second : -1;
    }

private:
    std::vector<std::pair<uint32_t, int>> entries_;
    std::vector<int> table_;
};

} // namespace

Side buildSide(const Topology& topo, std::vector<const Node*> gpus) {
    Side side;
    side.gpus = std::move(gpus);
    size_t n = side.gpus.size();
    Positions gpuPos, nodePos;
    for (size_t i = 0; i < n; ++i)
        gpuPos.add(side.gpus[i]->index, static_cast<int>(i));
    for (size_t i = 0; i < topo.nodes.size(); ++i)
        nodePos.add(topo.nodes[i].index, static_cast<int>(i));
    gpuPos.seal();
    nodePos.seal();

    for (size_t t = 0; t < kLinkTypes; ++t) {
        side.out[t].assign(n, GpuSet(n));
        side.in[t].assign(n, GpuSet(n));
    }
    side.cpuLinks.assign(n, {});
    // CPU-side links back to GPUs: per GPU, (CPU node index, link type index).
    std::vector<std::vector<std::pair<uint32_t, int>>> back(n);
    for (const Node& node : topo.nodes) {
        if (gpuPos.find(node.index) >= 0)
            continue;
        for (const Link& l : node.ioLinks) {
            int g = gpuPos.find(l.nodeTo);
            int t = linkIndex(l.type);
            if (g >= 0 && t >= 0)
                back[static_cast<size_t>(g)].push_back({node.index, t});
        }
    }
    std::vector<int> cpuPos(topo.nodes.size(), -1);
    for (size_t i = 0; i < n; ++i) {
        const Node& g = *side.gpus[i];
        for (const Link& l : g.ioLinks) {
            int t = linkIndex(l.type);
            int to = nodePos.find(l.nodeTo);
            if (t < 0 || to < 0 || l.nodeTo == g.index)
                continue;
            int j = gpuPos.find(l.nodeTo);
            if (j >= 0) {
                side.out[t][i].set(static_cast<size_t>(j));
                side.in[t][static_cast<size_t>(j)].set(i);
                continue;
            }
            int& c = cpuPos[static_cast<size_t>(to)];
            if (c < 0) {
                c = static_cast<int>(side.cpus.size());
                side.cpus.push_back(&topo.nodes[static_cast<size_t>(to)]);
            }
            bool twoWay = std::find(back[i].begin(), back[i].end(), std::make_pair(l.nodeTo, t)) !=
                          back[i].end();
            CpuLink link{c, (t == kXgmi ? kKindXgmi : 0u) | (twoWay ? kKindTwoWay : 0u)};
            if (std::find(side.cpuLinks[i].begin(), side.cpuLinks[i].end(), link) ==
                side.cpuLinks[i].end())
                side.cpuLinks[i].push_back(link);
        }
    }
    side.gpusServing.assign(side.cpus.size(), std::vector<GpuSet>(kCpuKinds, GpuSet(n)));
    for (size_t i = 0; i < n; ++i)
        for (const CpuLink& l : side.cpuLinks[i])
            for (CpuKind need = 0; need < kCpuKinds; ++need)
                if ((l.kind & need) == need)
                    side.gpusServing[static_cast<size_t>(l.cpu)][need].set(i);
    side.profiles.reserve(n);
    for (size_t i = 0; i < n; ++i)
        side.profiles.push_back(readProfile(side, i));
    return side;
}

CpuKind neededKind(CpuKind sourceKind, const settings::CompatibilityChecks& checks) {
    CpuKind mask = (checks.xgmiLink ? kKindXgmi : 0u) | (checks.largeBar ? kKindTwoWay : 0u);
    return sourceKind & mask;
}

unsigned cpuNeeds(const Side& side, size_t gpu, const settings::CompatibilityChecks& checks) {
    unsigned needs = 0;
    for (const CpuLink& l : side.cpuLinks[gpu])
        if (CpuKind k = neededKind(l.kind, checks))
            needs |= 1u << k;
    return needs;
}

unsigned cpuServes(const Side& side, size_t gpu) {
    unsigned serves = 0;
    for (const CpuLink& l : side.cpuLinks[gpu])
        for (CpuKind need = 0; need < kCpuKinds; ++need)
            if ((l.kind & need) == need)
                serves |= 1u << need;
    return serves;
}

std::string describeSrc(const Node& node) {
    return strFormat("source GPU %s (node %u)", gpuIdHex(node.gpuId).c_str(), node.index);
}

std::string describeDst(const Node& node) {
    if (node.renderMinor() >= 0)
        return strFormat("destination GPU %s (node %u, renderD%d)", gpuIdHex(node.gpuId).c_str(),
                         node.index, node.renderMinor());
    return strFormat("destination GPU %s (node %u)", gpuIdHex(node.gpuId).c_str(), node.index);
}

std::string gpuList(const Side& side, const std::vector<size_t>& gpus) {
    std::string out;
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (i == 8) {
            out += strFormat(" and %zu more", gpus.size() - 8);
            break;
        }
        const Node& n = *side.gpus[gpus[i]];
        out += strFormat("%s%s (node %u)", i ? ", " : "", gpuIdHex(n.gpuId).c_str(), n.index);
    }
    return out.empty() ? "none" : out;
}

} // namespace topology::match
