// Logging: the sink receives prefixed lines, the threshold drops verbose ones, level parsing.
#include "base/log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using base::LogLevel;

std::vector<std::pair<LogLevel, std::string>> gLines;

void captureSink(LogLevel level, const char* line) {
    gLines.emplace_back(level, line);
}

class LogTest : public ::testing::Test {
protected:
    void SetUp() override {
        gLines.clear();
        saved_ = base::logThreshold();
        base::setLogSink(&captureSink);
    }
    void TearDown() override {
        base::setLogSink(nullptr);
        base::setLogThreshold(saved_);
    }
    LogLevel saved_ = LogLevel::Warn;
};

TEST_F(LogTest, GivenASink_WhenLogging_ThenItReceivesTheFormattedLinePrefixed) {
    base::setLogThreshold(LogLevel::Debug);

    HAL_LOG_INFO("GPU 0x%04x paused", 0x59ea);

    ASSERT_EQ(gLines.size(), 1u);
    EXPECT_EQ(gLines[0].first, LogLevel::Info);
    EXPECT_EQ(gLines[0].second, "amdgpu: GPU 0x59ea paused");
}

TEST_F(LogTest, GivenThresholdWarn_WhenLoggingEachLevel_ThenOnlyMsgErrorAndWarnPass) {
    base::setLogThreshold(LogLevel::Warn);

    base::logAt(LogLevel::Msg, "m");
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
    base::setLogThreshold(LogLevel::Debug);

    HAL_LOG_DEBUG("d");

    ASSERT_EQ(gLines.size(), 1u);
    EXPECT_EQ(gLines[0].first, LogLevel::Debug);
}

TEST_F(LogTest, GivenASetThreshold_WhenQueried_ThenItIsReturned) {
    base::setLogThreshold(LogLevel::Info);

    EXPECT_EQ(base::logThreshold(), LogLevel::Info);
}

TEST_F(LogTest, GivenTheSinkResetToNull_WhenLogging_ThenTheCaptureSinkNoLongerReceives) {
    base::setLogThreshold(LogLevel::Error);
    base::setLogSink(nullptr);

    testing::internal::CaptureStderr();
    HAL_LOG_ERROR("to stderr");
    std::string err = testing::internal::GetCapturedStderr();

    EXPECT_TRUE(gLines.empty());
    EXPECT_EQ(err, "Error: amdgpu: to stderr\n");
}

TEST(ParseLogLevel, GivenDigitsZeroToFour_WhenParsed_ThenEachMapsToItsLevel) {
    LogLevel out = LogLevel::Msg;
    for (int i = 0; i <= 4; ++i) {
        ASSERT_TRUE(base::parseLogLevel(std::to_string(i), &out)) << i;
        EXPECT_EQ(static_cast<int>(out), i);
    }
}

TEST(ParseLogLevel, GivenNamesInAnyCase_WhenParsed_ThenTheyMapToLevels) {
    LogLevel out = LogLevel::Msg;
    ASSERT_TRUE(base::parseLogLevel("msg", &out));
    EXPECT_EQ(out, LogLevel::Msg);
    ASSERT_TRUE(base::parseLogLevel("ERROR", &out));
    EXPECT_EQ(out, LogLevel::Error);
    ASSERT_TRUE(base::parseLogLevel("Warn", &out));
    EXPECT_EQ(out, LogLevel::Warn);
    ASSERT_TRUE(base::parseLogLevel("info", &out));
    EXPECT_EQ(out, LogLevel::Info);
    ASSERT_TRUE(base::parseLogLevel("debug", &out));
    EXPECT_EQ(out, LogLevel::Debug);
}

TEST(ParseLogLevel, GivenSomethingElse_WhenParsed_ThenFalseAndTheOutputIsUntouched) {
    LogLevel out = LogLevel::Info;
    for (const char* bad : {"5", "-1", "", "verbose", "04", " 1", "warning"}) {
        EXPECT_FALSE(base::parseLogLevel(bad, &out)) << "'" << bad << "'";
        EXPECT_EQ(out, LogLevel::Info);
    }
}

} // namespace
