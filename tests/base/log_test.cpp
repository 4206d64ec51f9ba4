// Logging: the sink receives prefixed lines, the threshold drops verbose ones, level parsing.
#include "base/log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using hal::LogLevel;

std::vector<std::pair<LogLevel, std::string>> gLines;

void captureSink(LogLevel level, const char* line) {
    gLines.emplace_back(level, line);
}

class LogTest : public ::testing::Test {
protected:
    void SetUp() override {
        gLines.clear();
        saved_ = hal::logThreshold();
        hal::setLogSink(&captureSink);
    }
    void TearDown() override {
        hal::setLogSink(nullptr);
        hal::setLogThreshold(saved_);
    }
    LogLevel saved_ = LogLevel::Warn;
};

TEST_F(LogTest, GivenASink_WhenLogging_ThenItReceivesTheFormattedLinePrefixed) {
    hal::setLogThreshold(LogLevel::Debug);

    HAL_LOG_INFO("GPU 0x%04x paused", 0x59ea);

    ASSERT_EQ(gLines.size(), 1u);
    EXPECT_EQ(gLines[0].first, LogLevel::Info);
    EXPECT_EQ(gLines[0].second, "amdgpu: GPU 0x59ea paused");
}

TEST_F(LogTest, GivenThresholdWarn_WhenLoggingEachLevel_ThenOnlyMsgErrorAndWarnPass) {
    hal::setLogThreshold(LogLevel::Warn);

    hal::logAt(LogLevel::Msg, "m");
    HAL_LOG_ERROR("e");
    HAL_LOG_WARN("w");
    HAL_LOG_INFO("i");
    HAL_LOG_DEBUG("d");

    ASSERT_EQ(gLines.size(), 3u);
    EXPECT_EQ(gLines[0].second, "amdgpu: m");
    EXPECT_EQ(gLines[1].second, "amdgpu: e");
    EXPECT_EQ(gLines[2].second, "amdgpu: w");
}

TEST_F(LogTest, GivenThresholdDebug_WhenLoggingDebug_ThenItPasses) {
    hal::setLogThreshold(LogLevel::Debug);

    HAL_LOG_DEBUG("d");

    ASSERT_EQ(gLines.size(), 1u);
    EXPECT_EQ(gLines[0].first, LogLevel::Debug);
}

TEST_F(LogTest, GivenASetThreshold_WhenQueried_ThenItIsReturned) {
    hal::setLogThreshold(LogLevel::Info);

    EXPECT_EQ(hal::logThreshold(), LogLevel::Info);
}

TEST_F(LogTest, GivenTheSinkResetToNull_WhenLogging_ThenTheCaptureSinkNoLongerReceives) {
    hal::setLogThreshold(LogLevel::Error);
    hal::setLogSink(nullptr);

    testing::internal::CaptureStderr();
    HAL_LOG_ERROR("to stderr");
    std::string err = testing::internal::GetCapturedStderr();

    EXPECT_TRUE(gLines.empty());
    EXPECT_EQ(err, "Error: amdgpu: to stderr\n");
}

TEST(ParseLogLevel, GivenDigitsZeroToFour_WhenParsed_ThenEachMapsToItsLevel) {
    LogLevel out = LogLevel::Msg;
    for (int i = 0; i <= 4; ++i) {
        ASSERT_TRUE(hal::parseLogLevel(std::to_string(i), &out)) << i;
        EXPECT_EQ(static_cast<int>(out), i);
    }
}

TEST(ParseLogLevel, GivenNamesInAnyCase_WhenParsed_ThenTheyMapToLevels) {
    LogLevel out = LogLevel::Msg;
    ASSERT_TRUE(hal::parseLogLevel("msg", &out));
    EXPECT_EQ(out, LogLevel::Msg);
    ASSERT_TRUE(hal::parseLogLevel("ERROR", &out));
    EXPECT_EQ(out, LogLevel::Error);
    ASSERT_TRUE(hal::parseLogLevel("Warn", &out));
    EXPECT_EQ(out, LogLevel::Warn);
    ASSERT_TRUE(hal::parseLogLevel("info", &out));
    EXPECT_EQ(out, LogLevel::Info);
    ASSERT_TRUE(hal::parseLogLevel("debug", &out));
    EXPECT_EQ(out, LogLevel::Debug);
}

TEST(ParseLogLevel, GivenSomethingElse_WhenParsed_ThenFalseAndTheOutputIsUntouched) {
    LogLevel out = LogLevel::Info;
    for (const char* bad : {"5", "-1", "", "verbose", "04", " 1", "warning"}) {
        EXPECT_FALSE(hal::parseLogLevel(bad, &out)) << "'" << bad << "'";
        EXPECT_EQ(out, LogLevel::Info);
    }
}

} // namespace
