// Subsets of a machine's GPUs: those a checkpoint used, those a process can open (by their render
// nodes), and what to say when a mapping fails because it was given too few.
#include "topology/match.h"

#include <filesystem>

namespace topology {

using base::strFormat;

Topology usedGpusOnly(const Topology& topo, const std::set<int>& minors) {
    Topology out = topo;
    out.nodes.clear();
    std::set<uint32_t> kept;
    for (const Node& node : topo.nodes) {
        if (node.isGpu() && !node.isCpu() && !minors.count(node.renderMinor()))
            continue;
        kept.insert(node.index);
        out.nodes.push_back(node);
    }
    for (Node& node : out.nodes) {
        std::erase_if(node.ioLinks, [&](const Link& l) { return !kept.count(l.nodeTo); });
        std::erase_if(node.p2pLinks, [&](const Link& l) { return !kept.count(l.nodeTo); });
    }
    return out;
}

std::set<uint32_t> gpusWithRenderNodes(const Topology& topo, const std::string& devRoot) {
    std::set<uint32_t> out;
    for (const Node* gpu : topo.gpus()) {
        std::error_code ec;
        if (gpu->renderMinor() >= 0 &&
            std::filesystem::exists(devRoot + "/dri/renderD" + std::to_string(gpu->renderMinor()),
                                    ec))
            out.insert(gpu->gpuId);
    }
    return out;
}

namespace {

std::string unusableGpusReason(const Topology& local, const std::set<uint32_t>& usable,
                               const std::string& view) {
    std::string can, cannot;
    for (const Node* gpu : local.gpus()) {
        std::string item = strFormat("0x%04x (renderD%d)", gpu->gpuId, gpu->renderMinor());
        std::string& list = usable.count(gpu->gpuId) ? can : cannot;
        list += (list.empty() ? "" : ", ") + item;
    }
    if (cannot.empty())
        return "";
    std::string out = strFormat("the restoring process can open %s of the %zu GPUs of this "
                                "machine (%s)",
                                can.empty() ? "none" : ("only " + can).c_str(), local.gpus().size(),
                                local.source.c_str());
    if (!view.empty())
        out += ": " + view;
    return out + "; it was not given the device nodes of " + cannot +
           ": give the container /dev/kfd and the render node of each GPU the restore should "
           "use (a container restored in a new pod gets the GPUs its device plugin assigns)";
}

} // namespace

void explainUnusableGpus(MatchReport& report, const Topology& local,
                         const std::optional<std::set<uint32_t>>& usable, const std::string& view) {
    if (report.matched || !usable)
        return;
    std::string why = unusableGpusReason(local, *usable, view);
    if (!why.empty())
        report.reasons.push_back(std::move(why));
}

} // namespace topology
