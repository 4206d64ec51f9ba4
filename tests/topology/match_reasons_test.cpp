// What a user reads when no mapping exists.
#include "hal/topology_match.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

namespace {

using testsupport::gpuAt;
using testsupport::synth;

std::string only(const hal::MatchReport& r) {
    EXPECT_FALSE(r.matched);
    EXPECT_EQ(r.reasons.size(), 1u);
    return r.reasons.empty() ? "" : r.reasons[0];
}

TEST(MatchReasons, VramShortfallNamesGpuValuesAndOption) {
    hal::Topology s = synth(1, 0, 1, 0x1234), d = synth(2, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(s, 0), 68719476736ull);
    testsupport::setVram(gpuAt(d, 0), 34359738368ull);
    testsupport::setVram(gpuAt(d, 1), 17179869184ull);
    EXPECT_EQ(only(hal::matchTopologies(s, d, {})),
              "source GPU 0x1234 (node 1): no destination GPU has enough VRAM (needs 68719476736 "
              "bytes, largest candidate has 34359738368); set KFD_VRAM_SIZE_CHECK=0 or "
              "vram-size-check=false to allow");
}

TEST(MatchReasons, FirmwareNamesTheOption) {
    hal::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set("fw_version", 50);
    std::string r = only(hal::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPU 0x1000 (node 1)"), std::string::npos) << r;
    EXPECT_NE(r.find("fw_version >= 92 (largest candidate has 50)"), std::string::npos) << r;
    EXPECT_NE(r.find("KFD_FW_VER_CHECK=0 or fw-version-check=false"), std::string::npos) << r;
}

TEST(MatchReasons, SdmaFirmwareCachesAndGwsNameTheirOptions) {
    struct Case {
        const char* key;
        const char* option;
    };
    for (Case c : {Case{"sdma_fw_version", "sdma-fw-version-check"},
                   Case{"caches_count", "caches-count-check"}, Case{"num_gws", "num-gws-check"},
                   Case{"capability", "capability-check"}}) {
        hal::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
        gpuAt(d, 0).set(c.key, 1);
        std::string r = only(hal::matchTopologies(s, d, {}));
        EXPECT_NE(r.find(c.option), std::string::npos) << r;
    }
}

TEST(MatchReasons, EqualPropertyNamesValuesAndSaysItCannotBeRelaxed) {
    hal::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set("device_id", 0x74a1);
    EXPECT_EQ(only(hal::matchTopologies(s, d, {})),
              "source GPU 0x1000 (node 1): no destination GPU has device_id 29711 (candidates "
              "have 29857); device_id must be equal and cannot be relaxed");
}

TEST(MatchReasons, EveryBlockedSourceGpuGetsAReason) {
    hal::Topology s = synth(3), d = synth(3, 0, 1, 0x2000);
    for (size_t i = 0; i < 3; ++i)
        gpuAt(d, i).set("num_cp_queues", 8);
    hal::MatchReport r = hal::matchTopologies(s, d, {});
    ASSERT_EQ(r.reasons.size(), 3u);
    EXPECT_NE(r.reasons[2].find("0x1222 (node 3)"), std::string::npos) << r.reasons[2];
}

TEST(MatchReasons, TooFewCandidatesForAGroupIsAHallViolation) {
    // Both source GPUs need 64 GiB; only one destination GPU has it.
    hal::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 1), 32ull << 30);
    std::string r = only(hal::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1), 0x1111 (node 2) need 2 distinct destination "
                     "GPUs but only 1 pass"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("vram-size-check"), std::string::npos) << r;
}

TEST(MatchReasons, NumaReasonNamesTheGroupAndTheOption) {
    hal::Topology s = synth(2, 0, 1), d = synth(2, 0, 2, 0x2000);
    std::string r = only(hal::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1), 0x1111 (node 2) share CPU node 0"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("set KFD_NUMA_CHECK=0 or numa-check=false to allow"), std::string::npos) << r;
}

TEST(MatchReasons, XgmiReasonNamesTheHive) {
    hal::Topology s = synth(4, 1), d = synth(4, 2, 1, 0x2000);
    std::string r = only(hal::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPU 0x1000 (node 1) and its XGMI peers"), std::string::npos) << r;
    EXPECT_NE(r.find("hive of 4 GPUs"), std::string::npos) << r;
    EXPECT_NE(r.find("XGMI link cannot become PCIe"), std::string::npos) << r;
}

TEST(MatchReasons, HivesThatFitAloneButNotTogether) {
    hal::Topology s = synth(4, 2), d = synth(4, 0, 1, 0x2000);
    testsupport::setHives(d, {{0, 1}, {2}, {3}});
    std::string r = only(hal::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("fit one at a time but not all together"), std::string::npos) << r;
}

TEST(MatchReasons, CountReasonListsSourceGpus) {
    std::string r = only(hal::matchTopologies(synth(3), synth(2, 0, 1, 0x2000), {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1)"), std::string::npos) << r;
    EXPECT_NE(r.find("used 3 GPUs but the destination has only 2 usable"), std::string::npos) << r;
}

} // namespace
