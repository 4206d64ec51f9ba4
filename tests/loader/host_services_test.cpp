// What the host hands a backend: its log sink and threshold reach the backend's copy of the HAL,
// and backends are destroyed through their library before it is unloaded.
#include "loader_fixture.h"

#include "base/log.h"

#include <gtest/gtest.h>

namespace {

using loadertest::capturedLog;
using loadertest::captureSink;
using loadertest::logContains;
using loadertest::ScenarioDir;

class HostServices : public ::testing::Test {
protected:
    void SetUp() override {
        capturedLog().clear();
        savedThreshold_ = base::logThreshold();
    }
    void TearDown() override {
        base::setLogSink(nullptr);
        base::setLogThreshold(savedThreshold_);
    }
    base::LogLevel savedThreshold_ = base::LogLevel::Warn;
};

TEST_F(HostServices, GivenAHostSink_WhenABackendLogsWhileProbing_ThenTheHostSinkReceivesIt) {
    ScenarioDir dir{"test_good"};
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{},
                      hal::HostServices{&captureSink, base::LogLevel::Info});

    EXPECT_TRUE(logContains("amdgpu: test backend test-good probed"));
}

TEST_F(HostServices, GivenAHostThresholdOfWarn_WhenABackendLogsInfo_ThenNothingArrives) {
    ScenarioDir dir{"test_good"};
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{},
                      hal::HostServices{&captureSink, base::LogLevel::Warn});

    EXPECT_FALSE(logContains("test backend test-good probed"));
}

TEST_F(HostServices, GivenARegistry_WhenDestroyed_ThenEachBackendIsDestroyedByItsLibrary) {
    ScenarioDir dir{"test_good", "test_better"};
    {
        hal::BackendRegistry registry;
        registry.discover(dir.path(), settings::Settings{},
                          hal::HostServices{&captureSink, base::LogLevel::Info});
        ASSERT_FALSE(logContains("destroyed"));
    }

    EXPECT_TRUE(logContains("test backend test-good destroyed"));
    EXPECT_TRUE(logContains("test backend test-better destroyed"));
}

TEST_F(HostServices, GivenABrokenFile_WhenDiscoveredWithDebugLogging_ThenTheSkipReasonIsLogged) {
    ScenarioDir dir{"test_abi_major2"};
    base::setLogSink(&captureSink);
    base::setLogThreshold(base::LogLevel::Debug);
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    EXPECT_TRUE(logContains("test_abi_major2.so skipped: backend ABI 2.0"));
}

TEST_F(HostServices, GivenANotPresentBackend_WhenDiscoveredWithDebugLogging_ThenItsReasonIsLogged) {
    ScenarioDir dir{"test_absent"};
    base::setLogSink(&captureSink);
    base::setLogThreshold(base::LogLevel::Debug);
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    EXPECT_TRUE(logContains("not present: no /dev/test-absent device node"));
}

} // namespace
