#include "topology_seeds.h"

#include "fuzz_support.h"

#include "hal/topology_codec.h"
#include "hal/topology_synth.h"

#include <cstdlib>

namespace fuzzsupport {

std::vector<hal::Topology> seedTopologies() {
    std::vector<hal::Topology> out;
    hal::SyntheticSpec one;
    out.push_back(hal::makeSyntheticTopology(one));
    hal::SyntheticSpec numa;
    numa.cpuNodes = 2;
    numa.gpus = 4;
    out.push_back(hal::makeSyntheticTopology(numa));
    hal::SyntheticSpec hives;
    hives.cpuNodes = 2;
    hives.gpus = 8;
    hives.hives = 2;
    out.push_back(hal::makeSyntheticTopology(hives));
    hal::SyntheticSpec other;
    other.gpus = 2;
    other.deviceId = 0x73bf;
    other.vramBytes = 16ull << 30;
    other.gpuIdBase = 0xa000;
    out.push_back(hal::makeSyntheticTopology(other));
    return out;
}

std::string topologyImageBytes(const hal::Topology& topology) {
    MemoryStore store;
    if (!hal::writeTopologyImage(store, topology).ok())
        abort();
    return store.images().at(hal::kTopologyImageName);
}

} // namespace fuzzsupport
