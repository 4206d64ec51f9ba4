#include "topology/gpu_id.h"

#include "base/result.h"

#include <boost/crc.hpp>

#include <set>

namespace topology {

using base::strFormat;

uint16_t kfdGpuIdHash(const KfdGpuIdInputs& in) {
    const uint32_t words[8] = {in.devfn,
                               in.subsystemVendor | (in.subsystemDevice << 16),
                               in.domain,
                               in.deviceId,
                               in.bus,
                               static_cast<uint32_t>(in.localMemSize),
                               static_cast<uint32_t>(in.localMemSize >> 32),
                               in.xccStart | (in.numXcc << 16)};
    // The kernel hashes the words' bytes as they lie in memory, and its CPUs are little-endian.
    unsigned char bytes[sizeof words];
    for (size_t i = 0; i < 8; ++i)
        for (size_t b = 0; b < 4; ++b)
            bytes[4 * i + b] = static_cast<unsigned char>(words[i] >> (8 * b));
    boost::crc_16_type crc; // CRC-16/ARC, the variant of the kernel's lib/crc16.c
    crc.process_bytes(bytes, sizeof bytes);
    return static_cast<uint16_t>(crc.checksum());
}

uint32_t kfdUniqueGpuId(uint32_t hash, const std::function<bool(uint32_t)>& taken) {
    uint32_t id = hash & 0xffff;
    for (uint32_t tries = 0; tries < 0xffff; ++tries) {
        if (id == 0)
            id = 1;
        if (!taken(id))
            return id;
        id = (id + 1) & 0xffff;
    }
    for (uint32_t above = 0x10000; above != 0; ++above)
        if (!taken(above))
            return above;
    return 0;
}

void completeGpuIds(Topology* topology) {
    // Keep the first holder of each id; renumber later duplicates and derive missing ones.
    std::set<uint32_t> taken;
    std::vector<Node*> needId;
    for (Node& n : topology->nodes) {
        if (n.prop("simd_count") == 0)
            continue;
        if (n.gpuId == 0 || !taken.insert(n.gpuId).second)
            needId.push_back(&n);
    }
    for (Node* n : needId) {
        KfdGpuIdInputs in;
        uint64_t location = n->prop("location_id");
        in.devfn = static_cast<uint32_t>(location & 0xff); // with a partition's node id OR'ed in
        in.bus = static_cast<uint32_t>((location >> 8) & 0xff);
        in.domain = static_cast<uint32_t>(n->prop("domain"));
        in.deviceId = static_cast<uint32_t>(n->prop("device_id"));
        in.localMemSize = n->vramSize();
        in.numXcc = static_cast<uint32_t>(n->prop("num_xcc", 1));
        uint32_t old = n->gpuId;
        n->gpuId =
            kfdUniqueGpuId(kfdGpuIdHash(in), [&](uint32_t id) { return taken.count(id) != 0; });
        n->syntheticGpuId = true;
        taken.insert(n->gpuId);
        if (old == 0)
            topology->notes.push_back(strFormat("node %u: GPU without a gpu_id; using derived "
                                                "gpu_id %s",
                                                n->index, gpuIdHex(n->gpuId).c_str()));
        else
            topology->notes.push_back(strFormat("node %u: gpu_id %s is already used by another "
                                                "node; using derived gpu_id %s",
                                                n->index, gpuIdHex(old).c_str(),
                                                gpuIdHex(n->gpuId).c_str()));
    }
}

} // namespace topology
