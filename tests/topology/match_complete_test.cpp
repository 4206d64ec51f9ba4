// Completeness: cases with a known answer, including the ones CRIU's plugin gets wrong, and a
// randomized comparison against brute force on small machines.
#include "topology/match.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using testsupport::gpuAt;
using testsupport::gpuIdAt;
using testsupport::setVram;
using testsupport::synth;

constexpr uint64_t kGiB = 1ull << 30;

void expectValid(const topology::Topology& s, const topology::Topology& d,
                 const topology::MatchOptions& o, const topology::MatchReport& r) {
    ASSERT_TRUE(r.matched) << (r.reasons.empty() ? "" : r.reasons[0]);
    auto bad = testsupport::checkMapping(s, d, o, r.mapping);
    EXPECT_TRUE(bad.empty()) << bad.front();
}

TEST(MatchComplete, HivesMustSwapWhenVramForcesIt) {
    // Source: hive A (GPUs 0,1) needs 64 GiB, hive B (2,3) 32 GiB. Destination: hive X (0,1) has
    // 32 GiB, hive Y (2,3) 64 GiB. Only A->Y, B->X works (CRIU fault 1).
    topology::Topology s = synth(4, 2), d = synth(4, 2, 1, 0x2000);
    for (size_t i = 0; i < 4; ++i) {
        setVram(gpuAt(s, i), i < 2 ? 64 * kGiB : 32 * kGiB);
        setVram(gpuAt(d, i), i < 2 ? 32 * kGiB : 64 * kGiB);
    }
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    expectValid(s, d, {}, r);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)) >= gpuIdAt(d, 2), true);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 2)) <= gpuIdAt(d, 1), true);
}

TEST(MatchComplete, VramSizesThatFitInOnlyOneOrder) {
    // Source needs 8, 16, 24, ... GiB; destination offers the same sizes in reverse order.
    const size_t n = 8;
    topology::Topology s = synth(n), d = synth(n, 0, 1, 0x2000);
    for (size_t i = 0; i < n; ++i) {
        setVram(gpuAt(s, i), (i + 1) * 8 * kGiB);
        setVram(gpuAt(d, i), (n - i) * 8 * kGiB);
    }
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    expectValid(s, d, {}, r);
    for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(r.mapping.at(gpuIdAt(s, i)), gpuIdAt(d, n - 1 - i));
}

TEST(MatchComplete, TwoSmallHivesFitIntoOneLargeHive) {
    topology::Topology s = synth(4, 2), d = synth(4, 1, 1, 0x2000);
    expectValid(s, d, {}, topology::matchTopologies(s, d, {}));
}

TEST(MatchComplete, LargeHiveDoesNotFitIntoTwoSmallHives) {
    topology::Topology s = synth(4, 1), d = synth(4, 2, 1, 0x2000);
    EXPECT_FALSE(topology::matchTopologies(s, d, {}).matched);
}

TEST(MatchComplete, HiveMustAvoidTheDestinationHiveMissingALink) {
    // Destination hives {0..3} (one link one-way), {4..7}, {8..11}: the two source hives of four
    // take the two intact ones.
    topology::Topology s = synth(8, 2), d = synth(12, 3, 1, 0x2000);
    testsupport::removeLink(d, gpuAt(d, 0).index, gpuAt(d, 1).index);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    expectValid(s, d, {}, r);
    for (const auto& [src, dst] : r.mapping)
        EXPECT_GE(dst, gpuIdAt(d, 4));
}

TEST(MatchComplete, TwoDamagedDestinationHivesLeaveRoomForOnlyOneSourceHive) {
    topology::Topology s = synth(8, 2), d = synth(12, 3, 1, 0x2000);
    testsupport::removeLink(d, gpuAt(d, 0).index, gpuAt(d, 1).index);
    testsupport::removeLink(d, gpuAt(d, 5).index, gpuAt(d, 6).index);
    EXPECT_FALSE(topology::matchTopologies(s, d, {}).matched);
    EXPECT_FALSE(testsupport::bruteForceExists(synth(4, 1),
                                               [&] {
                                                   topology::Topology one = synth(4, 1, 1, 0x2000);
                                                   testsupport::removeLink(one, gpuAt(one, 0).index,
                                                                           gpuAt(one, 1).index);
                                                   return one;
                                               }(),
                                               {}));
}

TEST(MatchComplete, NumaAndHivesTogether) {
    // Source: 2 CPUs, hive {0,2} on CPU 0, hive {1,3} on CPU 1. Destination: same shape with the
    // 64 GiB GPUs on the second CPU only.
    topology::Topology s = synth(4, 0, 2), d = synth(4, 0, 2, 0x2000);
    testsupport::setHives(s, {{0, 2}, {1, 3}});
    testsupport::setHives(d, {{0, 2}, {1, 3}});
    setVram(gpuAt(s, 0), 64 * kGiB);
    setVram(gpuAt(s, 2), 64 * kGiB);
    setVram(gpuAt(s, 1), 16 * kGiB);
    setVram(gpuAt(s, 3), 16 * kGiB);
    setVram(gpuAt(d, 0), 16 * kGiB);
    setVram(gpuAt(d, 2), 16 * kGiB);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    expectValid(s, d, {}, r);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)) % 2, gpuIdAt(d, 1) % 2);
}

TEST(MatchComplete, SixtyFourPartitionsShuffledMatchQuickly) {
    topology::Topology s = synth(64, 1, 2), d = synth(64, 1, 2, 0x2000);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    expectValid(s, d, {}, r);
    EXPECT_LT(r.searchNodes, 1000u);
}

TEST(MatchComplete, ManyIdenticalHivesWithOneBrokenFailQuickly) {
    // 8 source hives of 4; the destination's 8th hive misses a link: no mapping, found fast.
    topology::Topology s = synth(32, 8), d = synth(32, 8, 1, 0x2000);
    testsupport::removeLink(d, gpuAt(d, 28).index, gpuAt(d, 29).index);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    EXPECT_FALSE(r.matched);
    EXPECT_LT(r.searchNodes, 20000u);
}

/// Random small machines: the matcher finds a mapping exactly when brute force does, under random
/// rules in force, and every relaxation its messages offer gives a mapping that breaks no other
/// rule.
class RandomSmall : public ::testing::TestWithParam<int> {};

topology::Topology randomTopology(std::mt19937& rng, size_t gpus, uint32_t base) {
    unsigned cpus = 1 + rng() % 2;
    topology::Topology t = synth(static_cast<unsigned>(gpus), 0, cpus, base);
    std::vector<std::vector<size_t>> hives;
    std::vector<size_t> order(gpus);
    for (size_t i = 0; i < gpus; ++i)
        order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < gpus;) {
        size_t size = 1 + rng() % 3;
        std::vector<size_t> h;
        for (size_t k = 0; k < size && i < gpus; ++k)
            h.push_back(order[i++]);
        hives.push_back(h);
    }
    testsupport::setHives(t, hives);
    for (size_t i = 0; i < gpus; ++i) {
        uint32_t gpu = gpuAt(t, i).index;
        setVram(gpuAt(t, i), (1 + rng() % 3) * 16 * kGiB);
        auto cpu = static_cast<uint32_t>(rng() % cpus);
        testsupport::attachToCpu(t, gpu, cpu);
        if (rng() % 3 == 0) // no large BAR: the CPU node does not link back
            testsupport::removeLink(t, cpu, gpu);
        else if (rng() % 8 == 0) { // the link back is of another type: no large BAR either
            testsupport::removeLink(t, cpu, gpu);
            testsupport::addLink(t, cpu, gpu, 11);
        }
        if (rng() % 10 == 0) { // an XGMI link to the CPU node (and back)
            testsupport::removeLink(t, gpu, cpu);
            testsupport::removeLink(t, cpu, gpu);
            testsupport::addLink(t, gpu, cpu, 11);
            if (rng() % 2)
                testsupport::addLink(t, cpu, gpu, 11);
        }
        if (rng() % 5 == 0)
            gpuAt(t, i).set("fw_version", 90 + rng() % 4);
    }
    // Peer-to-peer PCIe links between GPUs of different hives, one-way or two-way.
    for (size_t i = 0; i < gpus; ++i)
        for (size_t j = 0; j < gpus; ++j) {
            uint32_t a = gpuAt(t, i).index, b = gpuAt(t, j).index;
            if (i == j || (gpuAt(t, i).hiveId() == gpuAt(t, j).hiveId() && gpuAt(t, i).hiveId()))
                continue;
            if (rng() % 4 == 0)
                testsupport::addLink(t, a, b, 2);
        }
    if (rng() % 4 == 0 && gpus > 1) // an occasional one-way XGMI link
        testsupport::removeLink(t, gpuAt(t, 0).index, gpuAt(t, 1).index);
    if (rng() % 6 == 0 && gpus > 2) { // an XGMI link answered by PCIe
        testsupport::removeLink(t, gpuAt(t, 2).index, gpuAt(t, 1).index);
        testsupport::addLink(t, gpuAt(t, 1).index, gpuAt(t, 2).index, 11);
        testsupport::addLink(t, gpuAt(t, 2).index, gpuAt(t, 1).index, 2);
    }
    return t;
}

TEST_P(RandomSmall, AgreesWithBruteForce) {
    std::mt19937 rng(static_cast<unsigned>(GetParam()));
    int found = 0, failed = 0;
    for (int round = 0; round < 40; ++round) {
        size_t ns = 1 + rng() % 5, nd = ns + rng() % 2;
        topology::Topology s = randomTopology(rng, ns, 0x1000);
        topology::Topology d = randomTopology(rng, nd, 0x3000);
        topology::MatchOptions o;
        o.checks.numa = rng() % 2;
        o.checks.largeBar = rng() % 3 != 0;
        o.checks.xgmiLink = rng() % 3 != 0;
        o.checks.peerLink = rng() % 3 != 0;
        bool expected = testsupport::bruteForceExists(s, d, o);
        topology::MatchReport r = topology::matchTopologies(s, d, o);
        ASSERT_EQ(r.matched, expected) << "seed " << GetParam() << " round " << round;
        if (r.matched) {
            ++found;
            auto bad = testsupport::checkMapping(s, d, o, r.mapping);
            ASSERT_TRUE(bad.empty()) << bad.front();
        } else {
            ++failed;
            EXPECT_FALSE(r.reasons.empty());
            std::vector<std::string> unsafe = testsupport::unsafeRelaxations(s, d, o, r.reasons);
            EXPECT_TRUE(unsafe.empty())
                << "seed " << GetParam() << " round " << round << ": " << unsafe.front();
        }
    }
    EXPECT_GT(found, 0);
    EXPECT_GT(failed, 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomSmall, ::testing::Range(1, 11));

} // namespace
