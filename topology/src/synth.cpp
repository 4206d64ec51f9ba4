#include "topology/synth.h"

#include <algorithm>

namespace topology {
namespace {

constexpr uint32_t kVendorAmd = 0x1002;

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

Link makeLink(uint32_t type, uint32_t from, uint32_t to, uint32_t weight, uint64_t minBw,
              uint64_t maxBw, uint64_t sdmaMask, uint64_t flags) {
    Link l;
    l.type = type;
    l.nodeFrom = from;
    l.nodeTo = to;
    l.weight = weight;
    l.properties = {{"type", type},
                    {"version_major", 0},
                    {"version_minor", 0},
                    {"node_from", from},
                    {"node_to", to},
                    {"weight", weight},
                    {"min_latency", 0},
                    {"max_latency", 0},
                    {"min_bandwidth", minBw},
                    {"max_bandwidth", maxBw},
                    {"recommended_transfer_size", 0},
                    {"recommended_sdma_engine_id_mask", sdmaMask},
                    {"flags", flags}};
    return l;
}

Node makeCpu(uint32_t index, unsigned cpuNodes) {
    Node n;
    n.index = index;
    n.properties = {{"cpu_cores_count", 64},
                    {"simd_count", 0},
                    {"mem_banks_count", 1},
                    {"caches_count", 0},
                    {"io_links_count", 0},
                    {"p2p_links_count", 0},
                    {"cpu_core_id_base", index * 64ull},
                    {"simd_id_base", 0},
                    {"max_waves_per_simd", 0},
                    {"lds_size_in_kb", 0},
                    {"gds_size_in_kb", 0},
                    {"num_gws", 0},
                    {"wave_front_size", 0},
                    {"array_count", 0},
                    {"simd_arrays_per_engine", 0},
                    {"cu_per_simd_array", 0},
                    {"simd_per_cu", 0},
                    {"max_slots_scratch_cu", 0},
                    {"gfx_target_version", 0},
                    {"vendor_id", 0},
                    {"device_id", 0},
                    {"location_id", 0},
                    {"domain", 0},
                    {"drm_render_minor", 0},
                    {"hive_id", 0},
                    {"num_sdma_engines", 0},
                    {"num_sdma_xgmi_engines", 0},
                    {"num_sdma_queues_per_engine", 0},
                    {"num_cp_queues", 0},
                    {"max_engine_clk_ccompute", 2450}};
    MemBank bank;
    bank.heapType = 0;
    bank.sizeInBytes = 512ull << 30;
    bank.properties = {{"heap_type", 0},
                       {"size_in_bytes", bank.sizeInBytes},
                       {"flags", 0},
                       {"width", 64},
                       {"mem_clk_max", 3200}};
    n.memBanks.push_back(bank);
    for (uint32_t other = 0; other < cpuNodes; ++other)
        if (other != index)
            n.ioLinks.push_back(makeLink(1, index, other, 32, 0, 0, 0, 0));
    return n;
}

Node makeGpu(const SyntheticSpec& spec, unsigned i, uint32_t index, uint64_t hiveId) {
    Node n;
    n.index = index;
    n.gpuId = spec.gpuIdBase + i * spec.gpuIdStride;
    n.name = "aldebaran";
    unsigned pciSlot = 3 + 4 * i;
    uint64_t bus = pciSlot % 256;
    uint64_t domain = pciSlot / 256;
    constexpr unsigned kCaches = 25;
    n.properties = {
        {"cpu_cores_count", 0},
        {"simd_count", 416},
        {"mem_banks_count", 1},
        {"caches_count", kCaches},
        {"io_links_count", 0},
        {"p2p_links_count", 0},
        {"cpu_core_id_base", 0},
        {"simd_id_base", 2147487744ull + i * 0x1000ull},
        {"max_waves_per_simd", 8},
        {"lds_size_in_kb", 64},
        {"gds_size_in_kb", 0},
        {"num_gws", 64},
        {"wave_front_size", 64},
        {"array_count", 8},
        {"simd_arrays_per_engine", 1},
        {"cu_per_simd_array", 14},
        {"simd_per_cu", 4},
        {"max_slots_scratch_cu", 32},
        {"gfx_target_version", 90010},
        {"vendor_id", kVendorAmd},
        {"device_id", spec.deviceId},
        {"location_id", bus << 8},
        {"domain", domain},
        {"drm_render_minor", static_cast<uint64_t>(spec.renderMinorBase + static_cast<int>(i))},
        {"hive_id", hiveId},
        {"num_sdma_engines", 2},
        {"num_sdma_xgmi_engines", 3},
        {"num_sdma_queues_per_engine", 8},
        {"num_cp_queues", 24},
        {"max_engine_clk_fcompute", 1700},
        {"local_mem_size", 0},
        {"fw_version", 92},
        {"capability", 746037888},
        {"capability2", 0},
        {"debug_prop", 470},
        {"sdma_fw_version", 9},
        {"unique_id", mix(0x5eed0000ull + n.gpuId)},
        {"num_xcc", 1},
        {"max_engine_clk_ccompute", 2450}};
    MemBank bank;
    bank.heapType = 1;
    bank.sizeInBytes = spec.vramBytes;
    bank.properties = {{"heap_type", 1},
                       {"size_in_bytes", spec.vramBytes},
                       {"flags", 0},
                       {"width", 4096},
                       {"mem_clk_max", 1600}};
    bank.usedMemory = 0;
    n.memBanks.push_back(bank);
    for (unsigned c = 0; c < kCaches; ++c) {
        Cache cache;
        bool l2 = c + 1 == kCaches;
        bool scalar = c >= 16 && !l2;
        cache.properties = {{"processor_id_low", 2147487744ull + i * 0x1000ull + c * 4},
                            {"level", l2 ? 2u : 1u},
                            {"size", l2 ? 8192u : 16u},
                            {"cache_line_size", l2 ? 128u : 64u},
                            {"cache_lines_per_tag", 0},
                            {"association", l2 ? 16u : 4u},
                            {"latency", 0},
                            {"type", scalar ? 5u : 9u}};
        cache.textProperties["sibling_map"] = l2 ? "1,1,1,1,1,1,1,1" : "1,0,0,0,0,0,0,0";
        n.caches.push_back(cache);
    }
    return n;
}

} // namespace

Topology makeSyntheticTopology(const SyntheticSpec& spec) {
    Topology topo;
    topo.source = "synthetic";
    topo.generationId = 1;
    topo.systemProperties = {{"platform_oem", 0}, {"platform_id", 0}, {"platform_rev", 0}};
    unsigned cpus = std::max(1u, spec.cpuNodes);
    unsigned hives = std::min(spec.hives, spec.gpus);
    for (unsigned c = 0; c < cpus; ++c)
        topo.nodes.push_back(makeCpu(c, cpus));

    std::vector<unsigned> hiveOf(spec.gpus, 0);
    for (unsigned i = 0; i < spec.gpus; ++i) {
        unsigned hive = hives ? static_cast<unsigned>(uint64_t(i) * hives / spec.gpus) + 1 : 0;
        hiveOf[i] = hive;
        uint64_t hiveId = hive ? (mix(0x41ee0000ull + hive + spec.gpuIdBase) | 1) : 0;
        uint32_t index = cpus + i;
        Node gpu = makeGpu(spec, i, index, hiveId);
        uint32_t cpu = i % cpus;
        gpu.ioLinks.push_back(makeLink(2, index, cpu, 20, 312, 32000, 3, 1));
        topo.nodes[cpu].ioLinks.push_back(makeLink(2, cpu, index, 20, 312, 32000, 3, 3));
        topo.nodes.push_back(std::move(gpu));
    }
    for (unsigned i = 0; i < spec.gpus; ++i) {
        if (!hiveOf[i])
            continue;
        for (unsigned j = 0; j < spec.gpus; ++j)
            if (j != i && hiveOf[j] == hiveOf[i])
                topo.nodes[cpus + i].ioLinks.push_back(
                    makeLink(11, cpus + i, cpus + j, 15, 50000, 50000, 28, 1));
    }
    for (Node& n : topo.nodes)
        n.set("io_links_count", n.ioLinks.size());
    return topo;
}

} // namespace topology
