// The real captures under ../shared/fixtures/topology, each with what it is known to contain.
#include "topology/match.h"
#include "topology/sysfs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <set>

namespace {

class Capture : public ::testing::Test {
protected:
    topology::Topology load(const std::string& name) {
        std::string root = std::string(CRIU_AMDGPU_SHARED_FIXTURES) + "/" + name;
        auto t = topology::readKfdTopology(root);
        EXPECT_TRUE(t.ok()) << t.error().describe();
        return t.ok() ? *t : topology::Topology{};
    }
    void SetUp() override {
        struct stat st;
        if (::stat(CRIU_AMDGPU_SHARED_FIXTURES, &st) != 0)
            GTEST_SKIP() << "no captures at " << CRIU_AMDGPU_SHARED_FIXTURES;
    }
};

size_t links(const topology::Node& n, uint32_t type) {
    size_t c = 0;
    for (const topology::Link& l : n.ioLinks)
        c += l.type == type;
    return c;
}

std::set<uint32_t> gpuIds(const topology::Topology& t) {
    std::set<uint32_t> ids;
    for (const topology::Node* g : t.gpus())
        ids.insert(g->gpuId);
    return ids;
}

TEST_F(Capture, Vega10HasOneCpuTwoGpusAndTheOldKeySet) {
    topology::Topology t = load("vega10-1gpu");
    EXPECT_EQ(t.cpus().size(), 1u);
    ASSERT_EQ(t.gpus().size(), 2u);
    EXPECT_EQ(t.gpus()[0]->gpuId, 13261u);
    // Node 2 is a hand copy with the same gpu_id: renumbered, noted.
    EXPECT_NE(t.gpus()[1]->gpuId, 13261u);
    EXPECT_EQ(gpuIds(t).size(), 2u);
    EXPECT_FALSE(t.notes.empty());
    const topology::Node& g = *t.gpus()[0];
    EXPECT_EQ(g.prop("device_id"), 0x6860u);
    EXPECT_FALSE(g.has("gfx_target_version"));
    EXPECT_FALSE(g.has("hive_id"));
    EXPECT_EQ(g.vramSize(), 17163091968ull);
    EXPECT_EQ(g.caches.size(), 96u);
    EXPECT_EQ(g.prop("caches_count"), 96u);
    EXPECT_EQ(g.memBanks.size(), 1u);
    EXPECT_TRUE(g.memBanks[0].usedMemory.has_value());
    EXPECT_EQ(links(g, 2), 1u);
    EXPECT_EQ(t.hiveIds().size(), 0u);
    EXPECT_EQ(t.generationId, 2u);
    EXPECT_EQ(t.systemProperties.at("platform_rev"), 2u);
    EXPECT_TRUE(t.skipped.empty());
}

TEST_F(Capture, Mi210HasEightGpusInTwoHivesOfFour) {
    topology::Topology t = load("mi210-8gpu-2hives");
    EXPECT_EQ(t.cpus().size(), 2u);
    ASSERT_EQ(t.gpus().size(), 8u);
    EXPECT_EQ(gpuIds(t).size(), 8u); // derived, distinct, nonzero
    EXPECT_FALSE(gpuIds(t).count(0));
    EXPECT_EQ(t.hiveIds().size(), 2u);
    for (const topology::Node* g : t.gpus()) {
        EXPECT_TRUE(g->syntheticGpuId);
        EXPECT_EQ(g->prop("device_id"), 0x740fu);
        EXPECT_EQ(links(*g, 11), 3u);
        EXPECT_EQ(links(*g, 2), 1u);
        EXPECT_EQ(g->p2pLinks.size(), 5u);
        EXPECT_EQ(g->vramSize(), 0u); // local_mem_size 0 and no mem_banks captured
        EXPECT_TRUE(g->memBanks.empty());
    }
    EXPECT_EQ(links(*t.findIndex(0), 1), 1u);
    EXPECT_EQ(links(*t.findIndex(0), 2), 4u);
}

TEST_F(Capture, Mi300xCpxHas63PartitionsInOneHive) {
    topology::Topology t = load("mi300x-8card-cpx");
    EXPECT_EQ(t.cpus().size(), 2u);
    ASSERT_EQ(t.gpus().size(), 63u);
    EXPECT_EQ(gpuIds(t).size(), 63u);
    EXPECT_EQ(t.hiveIds().size(), 1u);
    int maxMinor = 0;
    for (const topology::Node* g : t.gpus()) {
        EXPECT_EQ(g->prop("device_id"), 0x74a1u);
        EXPECT_EQ(links(*g, 11), 62u);
        EXPECT_EQ(links(*g, 2), 1u);
        maxMinor = std::max(maxMinor, g->renderMinor());
    }
    EXPECT_EQ(maxMinor, 190);
}

TEST_F(Capture, Mi308xCpxHas32PartitionsAcrossTwoDomainsWithAbout48GiBEach) {
    topology::Topology t = load("mi308x-8card-cpx");
    EXPECT_EQ(t.cpus().size(), 2u);
    ASSERT_EQ(t.gpus().size(), 32u);
    std::set<uint64_t> domains;
    std::map<uint64_t, int> vram;
    for (const topology::Node* g : t.gpus()) {
        EXPECT_FALSE(g->syntheticGpuId);
        vram[g->vramSize()]++;
        EXPECT_EQ(g->name, "ip discovery");
        EXPECT_EQ(links(*g, 11), 31u);
        EXPECT_FALSE(g->caches.empty());
        domains.insert(g->prop("domain"));
    }
    EXPECT_EQ(domains.size(), 2u);
    // 24 partitions report exactly 48 GiB, 8 report 16 MiB less.
    EXPECT_EQ(vram,
              (std::map<uint64_t, int>{{(48ull << 30) - (16ull << 20), 8}, {48ull << 30, 24}}));
    EXPECT_EQ(t.hiveIds().size(), 1u);
    EXPECT_EQ(links(*t.findIndex(0), 5), 1u);
}

TEST_F(Capture, Mi100NodeOnlyIsOneGpuWithoutCpu) {
    topology::Topology t = load("mi100-node-only");
    ASSERT_EQ(t.gpus().size(), 1u);
    EXPECT_EQ(t.cpus().size(), 0u);
    EXPECT_EQ(t.gpus()[0]->gpuId, 42700u);
    EXPECT_EQ(t.gpus()[0]->name, "arcturus");
    EXPECT_EQ(t.gpus()[0]->prop("gfx_target_version"), 90008u);
}

TEST_F(Capture, Rx7900xtxIsWave32) {
    topology::Topology t = load("rx7900xtx-node-only");
    ASSERT_EQ(t.gpus().size(), 1u);
    EXPECT_EQ(t.gpus()[0]->prop("wave_front_size"), 32u);
    EXPECT_EQ(t.gpus()[0]->prop("device_id"), 0x744cu);
}

TEST_F(Capture, BristolRidgeApuIsBothCpuAndGpu) {
    topology::Topology t = load("apu-bristolridge-node-only");
    ASSERT_EQ(t.nodes.size(), 1u);
    EXPECT_TRUE(t.nodes[0].isCpu());
    EXPECT_TRUE(t.nodes[0].isGpu());
    EXPECT_EQ(t.nodes[0].renderMinor(), -1);
    EXPECT_FALSE(t.nodes[0].has("gfx_target_version"));
}

TEST_F(Capture, RavenRidgeApuIsBothCpuAndGpu) {
    topology::Topology t = load("apu-ravenridge-node-only");
    ASSERT_EQ(t.gpus().size(), 1u);
    EXPECT_EQ(t.cpus().size(), 1u);
    EXPECT_EQ(t.gpus()[0]->renderMinor(), 129);
    EXPECT_EQ(t.gpus()[0]->prop("simd_count"), 44u);
}

TEST_F(Capture, Rx470HasThe418KeySet) {
    topology::Topology t = load("rx470-node-only");
    ASSERT_EQ(t.gpus().size(), 1u);
    EXPECT_EQ(t.gpus()[0]->prop("device_id"), 0x67dfu);
    EXPECT_FALSE(t.gpus()[0]->has("hive_id"));
}

TEST_F(Capture, EveryMultiGpuCaptureMatchesItself) {
    for (const char* name :
         {"vega10-1gpu", "mi210-8gpu-2hives", "mi300x-8card-cpx", "mi308x-8card-cpx"}) {
        topology::Topology t = load(name);
        topology::MatchReport r = topology::matchTopologies(t, t, {});
        ASSERT_TRUE(r.matched) << name;
        for (const auto& [s, d] : r.mapping)
            EXPECT_EQ(s, d) << name; // restoring on the same machine keeps every GPU
    }
}

TEST_F(Capture, Mi210HivesCannotBeRestoredOnMi300x) {
    topology::MatchReport r =
        topology::matchTopologies(load("mi210-8gpu-2hives"), load("mi300x-8card-cpx"), {});
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 8u);
    EXPECT_NE(r.reasons[0].find("simd_count"), std::string::npos);
}

TEST_F(Capture, Mi300xSubsetOfEightPartitionsFitsOntoTheFullMachine) {
    topology::Topology full = load("mi300x-8card-cpx");
    topology::Topology part = full;
    // Keep the CPUs and 8 partitions of the first card and their links among themselves.
    std::vector<topology::Node> nodes;
    std::set<uint32_t> keep;
    for (const topology::Node& n : part.nodes)
        if (!n.isGpu() || n.index < 10)
            keep.insert(n.index);
    for (topology::Node n : part.nodes) {
        if (!keep.count(n.index))
            continue;
        std::vector<topology::Link> l;
        for (const topology::Link& x : n.ioLinks)
            if (keep.count(x.nodeTo))
                l.push_back(x);
        n.ioLinks = l;
        nodes.push_back(n);
    }
    part.nodes = nodes;
    ASSERT_EQ(part.gpus().size(), 8u);
    topology::MatchReport r = topology::matchTopologies(part, full, {});
    EXPECT_TRUE(r.matched);
    topology::MatchOptions exact;
    exact.exactGpuCount = true;
    EXPECT_FALSE(topology::matchTopologies(part, full, exact).matched);
}

} // namespace
