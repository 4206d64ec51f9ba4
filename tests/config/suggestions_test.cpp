#include "config/suggestions.h"

#include <cstdint>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace config {
namespace {

TEST(EditDistance, CountsEditsIgnoringCaseAndDashVersusUnderscore) {
    EXPECT_EQ(editDistance("numa-check", "numa-check"), 0u);
    EXPECT_EQ(editDistance("numa-check", "NUMA_CHECK"), 0u);
    EXPECT_EQ(editDistance("numa-chek", "numa-check"), 1u);
    EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
    EXPECT_EQ(editDistance("", "abc"), 3u);
}

TEST(NearestName, SuggestsTheClosestCandidate) {
    std::vector<std::string> names = {"numa-check", "num-gws-check", "mock-root"};
    EXPECT_EQ(nearestName("numa-chek", names), "numa-check");
    EXPECT_EQ(nearestName("mock_root", names), "mock-root");
}

TEST(NearestName, SuggestsNothingWhenNothingIsClose) {
    EXPECT_EQ(nearestName("completely-different", {"numa-check", "mock-root"}), "");
}

// Candidates whose length alone puts them out of reach are not measured; the answer must be the
// one measuring every candidate gives (the first of the nearest, within the limit).
TEST(NearestName, AnswersAsMeasuringEveryCandidateWould) {
    std::vector<std::string> names = {"numa-check", "num-gws-check", "mock-root", "backends",
                                      "max-buffer-size", "force-single-gpu-restore", "a", "ab"};
    std::vector<std::string> probes = {"", "a", "abc", "numa", "numa-chec", "mock-rot",
                                       "backend", "max-buf-size", "force-single-gpu", "x-y-z-w",
                                       std::string(200, 'n'), "mock-root-mock-root"};
    for (const std::string& probe : probes) {
        std::string expected;
        size_t best = SIZE_MAX;
        for (const std::string& n : names)
            if (size_t d = editDistance(probe, n); d < best) {
                best = d;
                expected = n;
            }
        if (best > std::max<size_t>(2, probe.size() / 3))
            expected.clear();
        EXPECT_EQ(nearestName(probe, names), expected) << "probe '" << probe << "'";
    }
}

TEST(UnknownNameMessage, PointsToHelpWithoutACloseName) {
    EXPECT_THAT(unknownNameMessage("key", "zzz", {"numa_check"}),
                testing::HasSubstr("criu-amdgpu config help"));
}

} // namespace
} // namespace config
