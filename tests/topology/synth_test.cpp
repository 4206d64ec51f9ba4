#include "topology/synth.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

#include <set>

namespace {

size_t linksOfType(const topology::Node& n, uint32_t type) {
    size_t c = 0;
    for (const topology::Link& l : n.ioLinks)
        c += l.type == type;
    return c;
}

TEST(SyntheticTopology, HasRequestedShape) {
    topology::Topology t = testsupport::synth(8, 2, 2);
    EXPECT_EQ(t.gpus().size(), 8u);
    EXPECT_EQ(t.cpus().size(), 2u);
    EXPECT_EQ(t.hiveIds().size(), 2u);
}

TEST(SyntheticTopology, GpuIdsAndRenderMinorsFollowTheSpec) {
    topology::SyntheticSpec spec;
    spec.gpus = 3;
    spec.gpuIdBase = 0x2000;
    spec.gpuIdStride = 0x10;
    spec.renderMinorBase = 200;
    topology::Topology t = topology::makeSyntheticTopology(spec);
    EXPECT_EQ(t.gpus()[2]->gpuId, 0x2020u);
    EXPECT_EQ(t.gpus()[2]->renderMinor(), 202);
    EXPECT_NE(t.findRenderMinor(201), nullptr);
}

TEST(SyntheticTopology, GpuNodesCarryEveryCurrentKernelKey) {
    topology::Topology t = testsupport::synth(1);
    const topology::Node& g = *t.gpus()[0];
    for (const char* key : {"cpu_cores_count",
                            "simd_count",
                            "mem_banks_count",
                            "caches_count",
                            "io_links_count",
                            "p2p_links_count",
                            "cpu_core_id_base",
                            "simd_id_base",
                            "max_waves_per_simd",
                            "lds_size_in_kb",
                            "gds_size_in_kb",
                            "num_gws",
                            "wave_front_size",
                            "array_count",
                            "simd_arrays_per_engine",
                            "cu_per_simd_array",
                            "simd_per_cu",
                            "max_slots_scratch_cu",
                            "gfx_target_version",
                            "vendor_id",
                            "device_id",
                            "location_id",
                            "domain",
                            "drm_render_minor",
                            "hive_id",
                            "num_sdma_engines",
                            "num_sdma_xgmi_engines",
                            "num_sdma_queues_per_engine",
                            "num_cp_queues",
                            "max_engine_clk_ccompute",
                            "max_engine_clk_fcompute",
                            "local_mem_size",
                            "fw_version",
                            "capability",
                            "capability2",
                            "debug_prop",
                            "sdma_fw_version",
                            "unique_id",
                            "num_xcc"})
        EXPECT_TRUE(g.has(key)) << key;
    EXPECT_EQ(g.prop("caches_count"), g.caches.size());
    EXPECT_EQ(g.prop("mem_banks_count"), g.memBanks.size());
    EXPECT_EQ(g.vramSize(), 64ull << 30);
}

TEST(SyntheticTopology, PcieLinksGoBothWaysBetweenGpuAndItsCpu) {
    topology::Topology t = testsupport::synth(4, 0, 2);
    for (const topology::Node* g : t.gpus()) {
        ASSERT_EQ(linksOfType(*g, 2), 1u);
        uint32_t cpu = g->ioLinks[0].nodeTo;
        EXPECT_EQ(cpu, (g->index - 2) % 2);
        bool back = false;
        for (const topology::Link& l : t.findIndex(cpu)->ioLinks)
            back |= l.type == 2 && l.nodeTo == g->index;
        EXPECT_TRUE(back);
    }
    EXPECT_EQ(linksOfType(*t.findIndex(0), 1), 1u); // CPU-CPU link
}

TEST(SyntheticTopology, HiveMembersShareAHiveIdAndAreFullyXgmiLinked) {
    topology::Topology t = testsupport::synth(8, 2);
    std::set<uint64_t> ids;
    for (const topology::Node* g : t.gpus()) {
        EXPECT_NE(g->hiveId(), 0u);
        ids.insert(g->hiveId());
        EXPECT_EQ(linksOfType(*g, 11), 3u);
        EXPECT_EQ(g->prop("io_links_count"), g->ioLinks.size());
        for (const topology::Link& l : g->ioLinks) {
            if (l.type == 11) {
                EXPECT_EQ(t.findIndex(l.nodeTo)->hiveId(), g->hiveId());
            }
        }
    }
    EXPECT_EQ(ids.size(), 2u);
}

TEST(SyntheticTopology, NoHivesMeansNoXgmi) {
    topology::Topology t = testsupport::synth(4);
    for (const topology::Node* g : t.gpus()) {
        EXPECT_EQ(g->hiveId(), 0u);
        EXPECT_EQ(linksOfType(*g, 11), 0u);
    }
}

} // namespace
