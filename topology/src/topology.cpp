#include "topology/topology.h"

#include <algorithm>
#include <cstdio>

namespace topology {

uint64_t Node::prop(const std::string& key, uint64_t fallback) const {
    auto it = properties.find(key);
    return it == properties.end() ? fallback : it->second;
}

uint64_t Node::vramSize() const {
    uint64_t local = prop("local_mem_size");
    if (local != 0)
        return local;
    uint64_t sum = 0;
    for (const MemBank& bank : memBanks) {
        if (bank.heapType == 1 || bank.heapType == 2)
            sum += bank.sizeInBytes;
    }
    return sum;
}

int Node::renderMinor() const {
    if (!has("drm_render_minor"))
        return -1;
    return static_cast<int>(prop("drm_render_minor"));
}

std::vector<const Node*> Topology::gpus() const {
    std::vector<const Node*> out;
    for (const Node& n : nodes)
        if (n.isGpu())
            out.push_back(&n);
    return out;
}

std::vector<const Node*> Topology::cpus() const {
    std::vector<const Node*> out;
    for (const Node& n : nodes)
        if (n.isCpu())
            out.push_back(&n);
    return out;
}

const Node* Topology::findGpu(uint32_t gpuId) const {
    for (const Node& n : nodes)
        if (n.gpuId == gpuId && n.isGpu())
            return &n;
    return nullptr;
}

const Node* Topology::findIndex(uint32_t index) const {
    for (const Node& n : nodes)
        if (n.index == index)
            return &n;
    return nullptr;
}

const Node* Topology::findRenderMinor(int minor) const {
    for (const Node& n : nodes)
        if (n.isGpu() && n.renderMinor() == minor)
            return &n;
    return nullptr;
}

std::vector<uint64_t> Topology::hiveIds() const {
    std::vector<uint64_t> out;
    for (const Node& n : nodes)
        if (n.isGpu() && n.hiveId() != 0)
            out.push_back(n.hiveId());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string gpuIdHex(uint32_t gpuId) {
    char buf[16];
    snprintf(buf, sizeof buf, "0x%x", gpuId);
    return buf;
}

} // namespace topology
