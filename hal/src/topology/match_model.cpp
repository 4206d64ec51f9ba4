#include "match_model.h"

#include "hal/result.h"

#include <map>

namespace hal::match {
namespace {

bool keptType(uint32_t type) {
    return type == static_cast<uint32_t>(LinkType::PciExpress) ||
           type == static_cast<uint32_t>(LinkType::Xgmi);
}

} // namespace

Side buildSide(const Topology& topo) {
    Side side;
    side.gpus = topo.gpus();
    size_t n = side.gpus.size();
    std::map<uint32_t, int> gpuPos;
    for (size_t i = 0; i < n; ++i)
        gpuPos[side.gpus[i]->index] = static_cast<int>(i);
    std::map<uint32_t, int> cpuPos;
    std::map<uint32_t, const Node*> present;
    for (const Node& node : topo.nodes)
        present[node.index] = &node;

    // Kept links from -> to, to find reverse halves.
    std::map<std::pair<uint32_t, uint32_t>, bool> kept;
    for (const Node& node : topo.nodes)
        for (const Link& l : node.ioLinks)
            if (keptType(l.type) && present.count(l.nodeTo))
                kept[{node.index, l.nodeTo}] = true;

    side.xgmiOut.assign(n, GpuSet(n));
    side.xgmiIn.assign(n, GpuSet(n));
    side.anyOut.assign(n, GpuSet(n));
    side.anyIn.assign(n, GpuSet(n));
    side.cpuLinks.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
        const Node& g = *side.gpus[i];
        for (const Link& l : g.ioLinks) {
            if (!keptType(l.type) || !present.count(l.nodeTo) || l.nodeTo == g.index)
                continue;
            bool xgmi = l.type == static_cast<uint32_t>(LinkType::Xgmi);
            auto gp = gpuPos.find(l.nodeTo);
            if (gp != gpuPos.end()) {
                size_t j = static_cast<size_t>(gp->second);
                side.anyOut[i].set(j);
                side.anyIn[j].set(i);
                if (xgmi) {
                    side.xgmiOut[i].set(j);
                    side.xgmiIn[j].set(i);
                }
                continue;
            }
            auto cp = cpuPos.find(l.nodeTo);
            if (cp == cpuPos.end()) {
                cp = cpuPos.emplace(l.nodeTo, static_cast<int>(side.cpus.size())).first;
                side.cpus.push_back(present[l.nodeTo]);
            }
            CpuLink link{cp->second, xgmi, kept.count({l.nodeTo, g.index}) != 0};
            bool dup = false;
            for (const CpuLink& have : side.cpuLinks[i])
                dup |= have == link;
            if (!dup)
                side.cpuLinks[i].push_back(link);
        }
    }
    side.gpusServing.assign(side.cpus.size(), std::vector<GpuSet>(4, GpuSet(n)));
    for (size_t i = 0; i < n; ++i)
        for (const CpuLink& l : side.cpuLinks[i])
            for (int kind = 0; kind < 4; ++kind) {
                bool needXgmi = kind & 1, needBidir = kind & 2;
                if ((!needXgmi || l.xgmi) && (!needBidir || l.bidir))
                    side.gpusServing[static_cast<size_t>(l.cpu)][static_cast<size_t>(kind)].set(i);
            }
    return side;
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

} // namespace hal::match
