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
    std::vector<std::string> names = {"numa-check",
                                      "num-gws-check",
                                      "mock-root",
                                      "backends",
                                      "max-buffer-size",
                                      "force-single-gpu-restore",
                                      "a",
                                      "ab"};
    std::vector<std::string> probes = {"",
                                       "a",
                                       "abc",
                                       "numa",
                                       "numa-chec",
                                       "mock-rot",
                                       "backend",
                                       "max-buf-size",
                                       "force-single-gpu",
                                       "x-y-z-w",
                                       std::string(200, 'n'),
                                       "mock-root-mock-root"};
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

// The banded measure against the whole table, on pairs of every length relation and bound.
TEST(EditDistanceWithin, IsTheDistanceUpToTheBoundAndTheBoundPlusOneBeyond) {
    std::vector<std::string> words = {"",
                                      "a",
                                      "ab",
                                      "ba",
                                      "numa-check",
                                      "NUMA_CHECK",
                                      "numa-chek",
                                      "kitten",
                                      "sitting",
                                      "mock-root",
                                      "root-mock",
                                      "backends",
                                      "max-buffer-size",
                                      std::string(40, 'x'),
                                      std::string(20, 'x') + "y" + std::string(19, 'x')};
    uint32_t state = 12345;
    auto next = [&] { return state = state * 1103515245u + 12345u; };
    for (int k = 0; k < 200; ++k) { // random words over a small alphabet: many near misses
        std::string w;
        for (uint32_t n = next() % 24; n > 0; --n)
            w += "ab-_AB"[(next() >> 8) % 6];
        words.push_back(w);
    }
    for (const std::string& a : words)
        for (const std::string& b : words) {
            size_t full = editDistance(a, b);
            for (size_t bound : {0u, 1u, 2u, 3u, 5u, 8u, 13u, 40u})
                ASSERT_EQ(editDistanceWithin(a, b, bound), std::min(full, bound + 1))
                    << "'" << a << "' '" << b << "' bound " << bound;
        }
}

TEST(UnknownNameMessage, PointsToHelpWithoutACloseName) {
    EXPECT_THAT(unknownNameMessage("key", "zzz", {"numa_check"}),
                testing::HasSubstr("criu-amdgpu config help"));
}

} // namespace
} // namespace config
