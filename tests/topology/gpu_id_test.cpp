// KFD's gpu_id: the hash (CRC-16/ARC over kfd_generate_gpu_id's eight words) checked against
// gpu_ids real machines reported, and the collision rule, which must end even when every id is
// taken.
#include "topology/gpu_id.h"
#include "topology/sysfs.h"

#include <gtest/gtest.h>

#include <boost/crc.hpp>

#include <map>
#include <set>
#include <string>
#include <sys/stat.h>

namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kMiB = 1ull << 20;

// An MI308X card in CPX mode (the mi308x-8card-cpx capture, ROCm/k8s-device-plugin testdata):
// PCI device 0x74a2 at function 0 of its bus, subsystem 1002:74a2, four partitions of one XCC
// each, partition k on XCC k; partitions 0-2 have 48 GiB, partition 3 16 MiB less (its mem_bank
// says so). The subsystem id is not in the capture: it is the one that reproduces its gpu_ids.
topology::KfdGpuIdInputs mi308xPartition(uint32_t domain, uint32_t bus, uint32_t partition,
                                         uint64_t memory) {
    topology::KfdGpuIdInputs in;
    in.devfn = 0;
    in.subsystemVendor = 0x1002;
    in.subsystemDevice = 0x74a2;
    in.domain = domain;
    in.deviceId = 0x74a2;
    in.bus = bus;
    in.localMemSize = memory;
    in.xccStart = partition;
    in.numXcc = 1;
    return in;
}

TEST(KfdGpuId, TheHashIsLinuxCrc16WhichIsCrc16Arc) {
    // The catalogue check value of CRC-16/ARC, and what Linux's table-driven crc16 gives for it.
    boost::crc_16_type crc;
    const char digits[] = "123456789";
    crc.process_bytes(digits, 9);
    EXPECT_EQ(crc.checksum(), 0xbb3d);
}

TEST(KfdGpuId, ReproducesTheGpuIdsAnMi308xCardReported) {
    // Card on bus 0x0a of domain 0 and card on bus 0x0b of domain 1: location_ids 2560..2563
    // and 2816..2819, gpu_ids as read from their gpu_id files.
    const std::map<uint32_t, uint32_t> domain0 = {{0, 24248}, {1, 41657}, {2, 59065}, {3, 2236}};
    const std::map<uint32_t, uint32_t> domain1 = {{0, 23332}, {1, 42789}, {2, 58149}, {3, 3360}};
    for (const auto& [part, id] : domain0) {
        uint64_t mem = part == 3 ? 48 * kGiB - 16 * kMiB : 48 * kGiB;
        EXPECT_EQ(topology::kfdGpuIdHash(mi308xPartition(0, 0x0a, part, mem)), id)
            << "partition " << part;
    }
    for (const auto& [part, id] : domain1) {
        uint64_t mem = part == 3 ? 48 * kGiB - 16 * kMiB : 48 * kGiB;
        EXPECT_EQ(topology::kfdGpuIdHash(mi308xPartition(1, 0x0b, part, mem)), id)
            << "partition " << part;
    }
}

TEST(KfdGpuId, ReproducesEveryGpuIdOfTheMi308xCapture) {
    std::string root = std::string(CRIU_AMDGPU_SHARED_FIXTURES) + "/mi308x-8card-cpx";
    struct stat st;
    if (::stat(root.c_str(), &st) != 0)
        GTEST_SKIP() << "no capture at " << root;
    auto topo = topology::readKfdTopology(root);
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    // A partition's location_id is its card's PCI id with the partition number OR'ed in
    // (kfd_topology_add_device); the card's own is the lowest of its partitions'.
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> cardLocation;
    for (const topology::Node* g : topo->gpus()) {
        auto key = std::make_pair(g->prop("domain"), g->prop("location_id") >> 8);
        auto it = cardLocation.find(key);
        if (it == cardLocation.end() || g->prop("location_id") < it->second)
            cardLocation[key] = g->prop("location_id");
    }
    size_t checked = 0;
    for (const topology::Node* g : topo->gpus()) {
        ASSERT_FALSE(g->syntheticGpuId);
        uint64_t location = g->prop("location_id");
        uint64_t card = cardLocation[{g->prop("domain"), location >> 8}];
        auto partition = static_cast<uint32_t>(location - card);
        topology::KfdGpuIdInputs in =
            mi308xPartition(static_cast<uint32_t>(g->prop("domain")),
                            static_cast<uint32_t>(location >> 8), 0, g->vramSize());
        in.devfn = static_cast<uint32_t>(card & 0xff);
        in.numXcc = static_cast<uint32_t>(g->prop("num_xcc"));
        in.xccStart = partition * in.numXcc;
        EXPECT_EQ(topology::kfdGpuIdHash(in), g->gpuId) << "node " << g->index;
        ++checked;
    }
    EXPECT_EQ(checked, 32u);
}

TEST(KfdGpuId, CollisionsMoveToTheNextFreeIdAndZeroIsNeverUsed) {
    std::set<uint32_t> taken = {0x1234, 0x1235, 0xffff, 1};
    auto isTaken = [&](uint32_t id) { return taken.count(id) != 0; };
    EXPECT_EQ(topology::kfdUniqueGpuId(0x1234, isTaken), 0x1236u);
    EXPECT_EQ(topology::kfdUniqueGpuId(0x4321, isTaken), 0x4321u);
    EXPECT_EQ(topology::kfdUniqueGpuId(0, isTaken), 2u) << "0 becomes 1, which is taken";
    EXPECT_EQ(topology::kfdUniqueGpuId(0xffff, isTaken), 2u) << "wraps past 0 to 1, then 2";
}

TEST(KfdGpuId, WhenEverySixteenBitIdIsTakenTheIdGoesAboveThem) {
    auto all16 = [](uint32_t id) { return id <= 0xffff; };
    EXPECT_EQ(topology::kfdUniqueGpuId(0x8000, all16), 0x10000u);
    auto upTo = [](uint32_t id) { return id <= 0x10002; };
    EXPECT_EQ(topology::kfdUniqueGpuId(7, upTo), 0x10003u);
}

TEST(KfdGpuId, AGpuWithoutIdStillGetsOneWhenEverySixteenBitIdIsTaken) {
    // 65,535 GPU nodes hold gpu_ids 1..65535 and one more has none (as read from a tree or an
    // image): the reader used to search the 16-bit ids for a free one forever.
    topology::Topology topo;
    topo.nodes.resize(0x10000);
    for (uint32_t i = 0; i < 0x10000; ++i) {
        topo.nodes[i].index = i;
        topo.nodes[i].set("simd_count", 64);
        topo.nodes[i].gpuId = i < 0xffff ? i + 1 : 0;
    }
    topology::completeGpuIds(&topo);
    const topology::Node& last = topo.nodes.back();
    EXPECT_TRUE(last.syntheticGpuId);
    EXPECT_EQ(last.gpuId, 0x10000u);
    EXPECT_EQ(topo.notes.size(), 1u);
    EXPECT_FALSE(topo.nodes.front().syntheticGpuId);
}

} // namespace
