#include "topology_seeds.h"

#include "fuzz_support.h"

#include "formats/topology_codec.h"
#include "topology/synth.h"

#include <cstdlib>

namespace fuzzsupport {

namespace {

constexpr size_t kCompactCachesPerNode = 2;

hal::Topology withFewCaches(hal::Topology t) {
    for (hal::Node& n : t.nodes) {
        if (n.caches.size() > kCompactCachesPerNode)
            n.caches.resize(kCompactCachesPerNode);
        if (n.properties.count("caches_count"))
            n.set("caches_count", n.caches.size());
    }
    return t;
}

} // namespace

std::vector<hal::Topology> seedTopologies(SeedSize size) {
    bool compact = size == SeedSize::Compact;
    std::vector<hal::Topology> out;
    hal::SyntheticSpec one;
    out.push_back(hal::makeSyntheticTopology(one));
    hal::SyntheticSpec numa;
    numa.cpuNodes = 2;
    numa.gpus = 4;
    out.push_back(hal::makeSyntheticTopology(numa));
    hal::SyntheticSpec hives;
    hives.cpuNodes = 2;
    hives.gpus = compact ? 4 : 8;
    hives.hives = 2;
    out.push_back(hal::makeSyntheticTopology(hives));
    hal::SyntheticSpec other;
    other.gpus = 2;
    other.deviceId = 0x73bf;
    other.vramBytes = 16ull << 30;
    other.gpuIdBase = 0xa000;
    out.push_back(hal::makeSyntheticTopology(other));
    if (compact)
        for (hal::Topology& t : out)
            t = withFewCaches(std::move(t));
    return out;
}

std::string topologyImageBytes(const hal::Topology& topology) {
    MemoryStore store;
    if (!hal::writeTopologyImage(store, topology).ok())
        abort();
    return store.images().at(hal::kTopologyImageName);
}

} // namespace fuzzsupport
