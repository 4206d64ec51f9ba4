// CRIU's own GPU remapping scenarios (plugins/amdgpu/tests/test_topology_remap.c: nine machines
// of XGMI hives, device ids, large-BAR GPUs and partial P2P-PCIe links), rebuilt here from their
// descriptions as KFD sysfs trees written and read back, with upstream's expected outcomes under
// default options; then the three cases where upstream's rules and ours used to differ (large BAR
// with numa-check off, test 8 run backwards, a return link of another type). Each runs under the
// default options and with each relevant check off; every answer is compared with brute force,
// every mapping checked rule by rule, and every relaxation a message names is tried.
//
// Upstream's conventions: gpu_id 0xWXYZ with W = A (source) or B (destination), Y the hive and Z
// the GPU; a GPU with large BAR is one whose CPU node links back to it (a two-way GPU-CPU link);
// P2P-PCIe links are io_links of type 2 between GPUs.
#include "temp_dir.h"
#include "topology/match.h"
#include "topology/synth.h"
#include "topology/sysfs.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

namespace {

using Flag = bool settings::CompatibilityChecks::*;
using C = settings::CompatibilityChecks;

constexpr uint32_t kPcie = 2, kXgmi = 11;

// A machine built node by node: CPU nodes first (indices 0..cpus-1), then GPUs in the order added.
class Machine {
public:
    explicit Machine(unsigned cpus) {
        topology::SyntheticSpec spec;
        spec.cpuNodes = 1;
        spec.gpus = 1;
        topology::Topology base = topology::makeSyntheticTopology(spec);
        cpu_ = base.nodes[0];
        gpu_ = base.nodes[1];
        cpu_.ioLinks.clear();
        gpu_.ioLinks.clear();
        gpu_.caches.clear(); // caches_count stays; the cache directories would only cost time
        for (unsigned c = 0; c < cpus; ++c) {
            topology::Node n = cpu_;
            n.index = c;
            topo_.nodes.push_back(n);
        }
    }

    // Adds a GPU node with this gpu_id and PCI device id; returns its node index.
    uint32_t gpu(uint32_t gpuId, uint32_t deviceId) {
        topology::Node n = gpu_;
        n.index = static_cast<uint32_t>(topo_.nodes.size());
        n.gpuId = gpuId;
        n.set("device_id", deviceId);
        n.set("drm_render_minor", 128 + n.index);
        topo_.nodes.push_back(n);
        return n.index;
    }

    // An io_link from -> to.
    void link(uint32_t from, uint32_t to, uint32_t type) {
        testsupport::addLink(topo_, from, to, type);
    }
    // Links both ways, of one type.
    void both(uint32_t a, uint32_t b, uint32_t type) {
        link(a, b, type);
        link(b, a, type);
    }

    // The machine as KFD shows it: written as a sysfs tree and read back.
    topology::Topology tree() const {
        testsupport::TempDir dir;
        EXPECT_TRUE(topology::writeKfdTopology(topo_, dir.path()).ok());
        auto read = topology::readKfdTopology(dir.path());
        EXPECT_TRUE(read.ok()) << read.error().describe();
        return read.ok() ? *read : topology::Topology{};
    }

private:
    topology::Node cpu_, gpu_;
    topology::Topology topo_;
};

// Two hives of four on two CPU nodes, as tests 0-5 and 7 lay them out. `idBase` is 0xA000 or
// 0xB000; hive 0 GPUs i = 0..3 get id base + i, hive 1 GPUs i = 4..7 get base + 0x10 + i; GPU i
// sits on CPU node i & 1 (nodes 2..9).
struct TwoHives {
    Machine m{2};
    uint32_t node[8];
    TwoHives(uint32_t idBase, uint32_t dev0, uint32_t dev1) {
        for (uint32_t i = 0; i < 8; ++i)
            node[i] = m.gpu(idBase + (i < 4 ? i : 0x10 + i), i < 4 ? dev0 : dev1);
    }
    // GPU i -> its CPU node, and with `back` the CPU node -> GPU i (large BAR).
    void cpuLink(uint32_t i, bool back) {
        m.link(node[i], i & 1, kPcie);
        if (back)
            m.link(i & 1, node[i], kPcie);
    }
    // XGMI between every two GPUs of the hive holding GPU `first` .. first+3.
    void hive(uint32_t first, uint32_t type = kXgmi) {
        for (uint32_t i = first; i < first + 4; ++i)
            for (uint32_t j = first; j < first + 4; ++j)
                if (i != j)
                    m.link(node[i], node[j], type);
    }
    // PCIe from GPU i to GPUs first..last.
    void pcieTo(uint32_t i, uint32_t first, uint32_t last) {
        for (uint32_t j = first; j <= last; ++j)
            m.link(node[i], node[j], kPcie);
    }
};

// Tests 0 and 5: every GPU two-way with its CPU node, hive 0 XGMI, every GPU of one half with
// PCIe to every GPU of the other half; `secondHive` is XGMI (test 0) or PCIe (test 5).
topology::Topology fullyLinked(uint32_t idBase, uint32_t dev0, uint32_t dev1, uint32_t secondHive) {
    TwoHives h(idBase, dev0, dev1);
    for (uint32_t i = 0; i < 8; ++i)
        h.cpuLink(i, true);
    h.hive(0);
    h.hive(4, secondHive);
    for (uint32_t i = 0; i < 4; ++i)
        h.pcieTo(i, 4, 7);
    for (uint32_t i = 4; i < 8; ++i)
        h.pcieTo(i, 0, 3);
    return h.m.tree();
}

// Tests 1 and 2: GPUs 0-5 two-way with their CPU node, 6-7 one-way; hive 0 has PCIe to GPUs 4-5,
// hive 1 has PCIe to all of hive 0 (two-way with 4-5, one-way from 6-7).
topology::Topology partialP2p(uint32_t idBase, uint32_t dev0, uint32_t dev1) {
    TwoHives h(idBase, dev0, dev1);
    for (uint32_t i = 0; i < 8; ++i)
        h.cpuLink(i, i < 6);
    h.hive(0);
    h.hive(4);
    for (uint32_t i = 0; i < 4; ++i)
        h.pcieTo(i, 4, 5);
    for (uint32_t i = 4; i < 8; ++i)
        h.pcieTo(i, 0, 3);
    return h.m.tree();
}

// Tests 3 and 4: one-way CPU links, no P2P-PCIe; CPU node 0 links back to GPU `large0` and CPU
// node 1 back to GPU `large1` (the only large-BAR GPUs).
topology::Topology oneLargeBarPerHive(uint32_t idBase, uint32_t large0, uint32_t large1) {
    TwoHives h(idBase, 0xD000, 0xD001);
    for (uint32_t i = 0; i < 8; ++i)
        h.cpuLink(i, false);
    h.hive(0);
    h.hive(4);
    h.m.link(0, h.node[large0], kPcie);
    h.m.link(1, h.node[large1], kPcie);
    return h.m.tree();
}

// Tests 6 and 8: one CPU node, five GPUs (nodes 1-5) two-way with it; `links[i]` lists the
// GPUs (0-based) GPU i has PCIe to.
topology::Topology fiveGpus(uint32_t idBase, const std::vector<uint32_t>& devices,
                            const std::vector<std::vector<uint32_t>>& links) {
    Machine m(1);
    uint32_t node[5];
    for (uint32_t i = 0; i < 5; ++i) {
        node[i] = m.gpu(idBase + i, devices[i]);
        m.both(node[i], 0, kPcie);
    }
    for (uint32_t i = 0; i < 5; ++i)
        for (uint32_t j : links[i])
            m.link(node[i], node[j], kPcie);
    return m.tree();
}

const std::vector<std::vector<uint32_t>> kTest8Source = {
    {1, 2}, {0, 2}, {0, 1}, {0, 1, 2}, {0, 1, 2}};
const std::vector<std::vector<uint32_t>> kTest8Destination = {
    {1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}, {0, 1, 2, 3}};

// ---- Options and their checks ----

struct Config {
    const char* name;
    std::vector<Flag> off;
};

const Config kDefault{"default", {}};
const Config kNumaOff{"numa-check off", {&C::numa}};
const Config kLargeBarOff{"large-bar-check off", {&C::largeBar}};
const Config kXgmiOff{"xgmi-link-check off", {&C::xgmiLink}};
const Config kP2pOff{"peer-link-check off", {&C::peerLink}};

topology::MatchOptions optionsWithout(const std::vector<Flag>& off) {
    topology::MatchOptions o;
    for (Flag f : off)
        o.checks.*f = false;
    return o;
}

// Runs one configuration: the outcome, brute force agreeing with it, the mapping valid rule by
// rule, and every relaxation a message offers giving a mapping that breaks no rule the relaxed
// options do not govern.
topology::MatchReport expectOutcome(const topology::Topology& s, const topology::Topology& d,
                                    const Config& config, bool expected) {
    topology::MatchOptions o = optionsWithout(config.off);
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    std::string reasons;
    for (const std::string& line : r.reasons)
        reasons += "\n  " + line;
    EXPECT_EQ(r.matched, expected) << config.name << reasons;
    EXPECT_EQ(testsupport::bruteForceExists(s, d, o), expected) << config.name << " (brute force)";
    if (r.matched) {
        std::vector<std::string> bad = testsupport::checkMapping(s, d, o, r.mapping);
        EXPECT_TRUE(bad.empty()) << config.name << ": " << (bad.empty() ? "" : bad.front());
        return r;
    }
    EXPECT_FALSE(r.reasons.empty()) << config.name;
    for (const std::string& unsafe : testsupport::unsafeRelaxations(s, d, o, r.reasons))
        ADD_FAILURE() << config.name << ": " << unsafe;
    return r;
}

void expectMaps(const topology::MatchReport& r, uint32_t from, uint32_t to) {
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(from), to) << std::hex << "0x" << from;
}

// ---- Upstream's nine ----

TEST(UpstreamScenarios, Test0HivesOfDifferentDevicesSwap) {
    topology::Topology s = fullyLinked(0xA000, 0xD000, 0xD001, kXgmi);
    topology::Topology d = fullyLinked(0xB000, 0xD001, 0xD000, kXgmi);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff}) {
        topology::MatchReport r = expectOutcome(s, d, c, true);
        for (uint32_t i = 0; i < 4; ++i) {
            expectMaps(r, 0xA000 + i, 0xB014 + i);
            expectMaps(r, 0xA014 + i, 0xB000 + i);
        }
    }
}

TEST(UpstreamScenarios, Test1PartialP2pOntoTheSameMachine) {
    topology::Topology s = partialP2p(0xA000, 0xD000, 0xD000);
    topology::Topology d = partialP2p(0xB000, 0xD000, 0xD000);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, true);
}

TEST(UpstreamScenarios, Test2PartialP2pWithSwappedDevicesFails) {
    // Source hive 0 (0xD000, all large BAR, two-way PCIe with GPUs 4-5) can only go to the
    // destination's hive 1, where two GPUs have large BAR and two-way PCIe links.
    topology::Topology s = partialP2p(0xA000, 0xD000, 0xD001);
    topology::Topology d = partialP2p(0xB000, 0xD001, 0xD000);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, false);
    // Both blocking rules off: the hives swap.
    expectOutcome(s, d, {"large-bar-check and peer-link-check off", {&C::largeBar, &C::peerLink}},
                  true);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    std::string text = testsupport::reasonsText(r);
    EXPECT_NE(text.find("large BAR"), std::string::npos) << text;
    EXPECT_NE(
        text.find("setting large-bar-check=false (CRIU_AMDGPU_LARGE_BAR_CHECK=0) and "
                  "peer-link-check=false (CRIU_AMDGPU_PEER_LINK_CHECK=0) together would allow"),
        std::string::npos)
        << text;
    EXPECT_EQ(text.find("numa-check=false"), std::string::npos) << "numa-check cannot help:\n"
                                                                << text;
}

TEST(UpstreamScenarios, Test3LargeBarGpusFindTheirOnlyCounterparts) {
    topology::Topology s = oneLargeBarPerHive(0xA000, 2, 7);
    topology::Topology d = oneLargeBarPerHive(0xB000, 0, 5);
    for (const Config& c : {kDefault, kNumaOff}) {
        topology::MatchReport r = expectOutcome(s, d, c, true);
        expectMaps(r, 0xA002, 0xB000);
        expectMaps(r, 0xA017, 0xB015);
    }
    for (const Config& c : {kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, true);
}

TEST(UpstreamScenarios, Test4OneWayLinkIsNoLargeBarFails) {
    // The destination's CPU node 1 links to GPU 4, whose own link goes to CPU node 0: no
    // two-way link, so hive 1 has no large-BAR GPU for source GPU 0xA017.
    topology::Topology s = oneLargeBarPerHive(0xA000, 2, 7);
    topology::Topology d = oneLargeBarPerHive(0xB000, 0, 4);
    for (const Config& c : {kDefault, kNumaOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, false);
    expectOutcome(s, d, kLargeBarOff, true);
    for (const Config& c : {kDefault, kNumaOff}) {
        topology::MatchReport r = topology::matchTopologies(s, d, optionsWithout(c.off));
        ASSERT_FALSE(r.reasons.empty());
        EXPECT_NE(r.reasons[0].find("large BAR"), std::string::npos) << testsupport::reasonsText(r);
        EXPECT_NE(r.reasons[0].find("setting large-bar-check=false"), std::string::npos)
            << testsupport::reasonsText(r);
        EXPECT_EQ(testsupport::reasonsText(r).find("numa-check=false"), std::string::npos)
            << testsupport::reasonsText(r);
    }
}

TEST(UpstreamScenarios, Test5OneHiveAndFourPcieGpus) {
    topology::Topology s = fullyLinked(0xA000, 0xD000, 0xD000, kPcie);
    topology::Topology d = fullyLinked(0xB000, 0xD000, 0xD000, kPcie);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, true);
}

TEST(UpstreamScenarios, Test6DevicesAtOtherPlaces) {
    topology::Topology s = fiveGpus(0xA000, {0xD000, 0xD000, 0xD001, 0xD000, 0xD001},
                                    {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}, {0, 1, 2, 3}});
    topology::Topology d = fiveGpus(0xB000, {0xD000, 0xD001, 0xD000, 0xD000, 0xD001},
                                    {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}, {0, 1, 2, 3}});
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff}) {
        topology::MatchReport r = expectOutcome(s, d, c, true);
        // The 0xD001 GPU with links to four others has one counterpart; the other goes to B001.
        expectMaps(r, 0xA004, 0xB004);
        expectMaps(r, 0xA002, 0xB001);
    }
    expectOutcome(s, d, kP2pOff, true);
}

TEST(UpstreamScenarios, Test7DestinationHasAnExtraHive) {
    TwoHives src(0xA000, 0xD000, 0xD000), dst(0xB000, 0xD000, 0xD000);
    for (uint32_t i = 0; i < 4; ++i) {
        src.cpuLink(i, false);
        dst.cpuLink(i, false);
    }
    src.hive(0);
    dst.hive(0);
    dst.hive(4);
    topology::Topology s = src.m.tree(), d = dst.m.tree();
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, true);
}

TEST(UpstreamScenarios, Test8MoreP2pLinksAtTheDestination) {
    topology::Topology s = fiveGpus(0xA000, std::vector<uint32_t>(5, 0xD000), kTest8Source);
    topology::Topology d = fiveGpus(0xB000, std::vector<uint32_t>(5, 0xD000), kTest8Destination);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, true);
}

// ---- The three cases where upstream's rules and ours differed ----

TEST(NewScenarios, LargeBarIsKeptWithNumaCheckOff) {
    // Source: GPU a two-way with CPU node 0 (large BAR), GPU b one-way to it. Destination: GPU A
    // one-way to CPU node 0, GPU B two-way with CPU node 1. Keeping the CPU grouping is
    // impossible; without it, a must still land on B, the one with large BAR.
    Machine src(2), dst(2);
    uint32_t a = src.gpu(0xA000, 0xD000), b = src.gpu(0xA001, 0xD000);
    src.both(a, 0, kPcie);
    src.link(b, 0, kPcie);
    uint32_t A = dst.gpu(0xB000, 0xD000), B = dst.gpu(0xB001, 0xD000);
    dst.link(A, 0, kPcie);
    dst.both(B, 1, kPcie);
    topology::Topology s = src.tree(), d = dst.tree();
    for (const Config& c : {kDefault, kLargeBarOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, false);
    topology::MatchReport r = expectOutcome(s, d, kNumaOff, true);
    expectMaps(r, 0xA000, 0xB001);
    expectMaps(r, 0xA001, 0xB000);
    expectOutcome(s, d, {"numa-check and large-bar-check off", {&C::numa, &C::largeBar}}, true);
    // The hint names numa-check (it is safe: the large-BAR GPU still lands on B).
    topology::MatchReport fail = topology::matchTopologies(s, d, {});
    EXPECT_NE(testsupport::reasonsText(fail).find(
                  "setting numa-check=false (KFD_NUMA_CHECK=0) would allow"),
              std::string::npos)
        << testsupport::reasonsText(fail);
}

TEST(NewScenarios, Test8BackwardsLosesTwoWayLinks) {
    // Four GPUs two-way with one another cannot land where at most three are.
    topology::Topology s = fiveGpus(0xA000, std::vector<uint32_t>(5, 0xD000), kTest8Destination);
    topology::Topology d = fiveGpus(0xB000, std::vector<uint32_t>(5, 0xD000), kTest8Source);
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff})
        expectOutcome(s, d, c, false);
    expectOutcome(s, d, kP2pOff, true);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    std::string text = testsupport::reasonsText(r);
    EXPECT_NE(text.find("two-way peer-to-peer links with 3 GPUs"), std::string::npos) << text;
    EXPECT_NE(
        text.find("setting peer-link-check=false (CRIU_AMDGPU_PEER_LINK_CHECK=0) would allow a "
                  "mapping, at this cost: GPUs that reached each other peer-to-peer"),
        std::string::npos)
        << text;
}

TEST(NewScenarios, AReturnLinkOfAnotherTypeToTheCpuIsNoLargeBar) {
    // Source GPU two-way PCIe with its CPU node; destination GPU PCIe to it, XGMI back.
    Machine src(1), dst(1);
    uint32_t a = src.gpu(0xA000, 0xD000);
    src.both(a, 0, kPcie);
    uint32_t A = dst.gpu(0xB000, 0xD000);
    dst.link(A, 0, kPcie);
    dst.link(0, A, kXgmi);
    topology::Topology s = src.tree(), d = dst.tree();
    for (const Config& c : {kDefault, kNumaOff, kXgmiOff, kP2pOff})
        expectOutcome(s, d, c, false);
    expectOutcome(s, d, kLargeBarOff, true);
}

TEST(NewScenarios, AReturnLinkOfAnotherTypeBetweenGpusIsNotTwoWay) {
    // Source GPUs two-way PCIe; destination XGMI one way and PCIe back.
    Machine src(1), dst(1);
    uint32_t a = src.gpu(0xA000, 0xD000), b = src.gpu(0xA001, 0xD000);
    src.both(a, 0, kPcie);
    src.both(b, 0, kPcie);
    src.both(a, b, kPcie);
    uint32_t A = dst.gpu(0xB000, 0xD000), B = dst.gpu(0xB001, 0xD000);
    dst.both(A, 0, kPcie);
    dst.both(B, 0, kPcie);
    dst.link(A, B, kXgmi);
    dst.link(B, A, kPcie);
    topology::Topology s = src.tree(), d = dst.tree();
    for (const Config& c : {kDefault, kNumaOff, kLargeBarOff, kXgmiOff})
        expectOutcome(s, d, c, false);
    expectOutcome(s, d, kP2pOff, true);
    // The other way round the source pair is not two-way either: XGMI a->b needs XGMI, PCIe
    // b->a needs a link, and the destination gives both.
    expectOutcome(d, d, kDefault, true);
}

} // namespace
