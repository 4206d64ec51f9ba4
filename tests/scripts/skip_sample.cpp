// A gtest program with one test that skips and one that passes: its XML report is what
// scripts/check-skips.py --gtest-xml reads (check_skips_test.sh).
#include <gtest/gtest.h>

TEST(SkipSample, Skips) {
    GTEST_SKIP() << "the sample's reason";
}

TEST(SkipSample, Passes) {
    EXPECT_EQ(1 + 1, 2);
}
