// config::parseUnsigned and config::parseNumber: the one reader of numbers for option values and
// command-line arguments.
#include "config/numbers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace {

using config::parseNumber;
using config::parseUnsigned;
using testing::HasSubstr;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(ParseUnsigned, ReadsDecimalOrHexDigitsAndSaysWhatFollows) {
    uint64_t value = 0;
    std::string_view rest;
    ASSERT_TRUE(parseUnsigned("512M", &value, &rest));
    EXPECT_EQ(value, 512u);
    EXPECT_EQ(rest, "M");
    ASSERT_TRUE(parseUnsigned("0x1aF.5", &value, &rest));
    EXPECT_EQ(value, 0x1afu);
    EXPECT_EQ(rest, ".5");
    ASSERT_TRUE(parseUnsigned("18446744073709551615", &value, &rest));
    EXPECT_EQ(value, kMax);
    EXPECT_EQ(rest, "");
}

TEST(ParseUnsigned, RejectsNoDigitsAndOverflow) {
    uint64_t value = 7;
    std::string_view rest;
    EXPECT_FALSE(parseUnsigned("", &value, &rest));
    EXPECT_FALSE(parseUnsigned("G", &value, &rest));
    EXPECT_FALSE(parseUnsigned("18446744073709551616", &value, &rest));
    EXPECT_FALSE(parseUnsigned("0x10000000000000000", &value, &rest));
    EXPECT_EQ(value, 7u);
}

TEST(ParseNumber, AcceptsTheWholeTextWithinTheRange) {
    EXPECT_EQ(*parseNumber("0", 0, 10), 0u);
    EXPECT_EQ(*parseNumber("10", 0, 10), 10u);
    EXPECT_EQ(*parseNumber("0x400", 1, 1024), 1024u);
    EXPECT_EQ(*parseNumber("0X10", 1, 1024), 16u);
    EXPECT_EQ(*parseNumber("18446744073709551615", 0, kMax), kMax);
    // A leading zero is decimal, not octal.
    EXPECT_EQ(*parseNumber("010", 0, 100), 10u);
}

TEST(ParseNumber, RejectsWhatIsNotANumberQuotingItAndTheRange) {
    for (const char* text : {"", "many", "-1", "+1", " 1", "1 ", "1.5", "2G", "0x", "0xg"}) {
        auto r = parseNumber(text, 1, 64);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
        std::string expected = "'"; // appended: GCC 12 -O3 warns falsely about "'" + std::string
        expected += text;
        expected += "' is not a number (accepted: a number from 1 to 64, decimal or 0x hex)";
        EXPECT_EQ(r.error().message(), expected) << text;
    }
}

TEST(ParseNumber, RejectsNumbersOutsideTheRangeAndOverflow) {
    for (const char* text : {"0", "65", "0x41", "99999999999999999999"}) {
        auto r = parseNumber(text, 1, 64);
        ASSERT_FALSE(r.ok()) << text;
        std::string expected = "'";
        expected += text;
        expected += "' is out of range";
        EXPECT_THAT(r.error().message(), HasSubstr(expected)) << text;
    }
}

} // namespace
