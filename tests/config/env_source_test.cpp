#include "config/sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;

namespace config {

using settings::CompatibilityChecks;

namespace {

OptionTarget applyEnv(const Environment& env) {
    auto r = readEnvironment(env);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    OptionTarget t;
    if (r.ok())
        for (const Assignment& a : *r)
            assignOption(*a.spec, t, a.value);
    return t;
}

std::string envError(const Environment& env) {
    auto r = readEnvironment(env);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error().message();
}

TEST(EnvSource, ReadsEveryLegacyKfdCheck) {
    OptionTarget t = applyEnv({{"KFD_FW_VER_CHECK", "0"},
                               {"KFD_SDMA_FW_VER_CHECK", "NO"},
                               {"KFD_CACHES_COUNT_CHECK", "false"},
                               {"KFD_NUM_GWS_CHECK", "Off"},
                               {"KFD_VRAM_SIZE_CHECK", "0"},
                               {"KFD_NUMA_CHECK", "no"},
                               {"KFD_CAPABILITY_CHECK", "FALSE"}});
    const CompatibilityChecks& c = t.settings.checks;
    EXPECT_FALSE(c.fwVersion || c.sdmaFwVersion || c.cachesCount || c.numGws || c.vramSize ||
                 c.numa || c.capability);
}

TEST(EnvSource, ReadsKfdMaxBufferSizeWithSuffix) {
    EXPECT_EQ(applyEnv({{"KFD_MAX_BUFFER_SIZE", "512M"}}).settings.maxBufferSize, 512ull << 20);
}

TEST(EnvSource, ReadsCriuAmdgpuNames) {
    OptionTarget t = applyEnv({{"CRIU_AMDGPU_MOCK_ROOT", "/tmp/m"},
                               {"CRIU_AMDGPU_BACKEND", "mock"},
                               {"CRIU_AMDGPU_DEVICE_MAP", "0x1=0x2"},
                               {"CRIU_AMDGPU_PARALLEL_RESTORE", "1"},
                               {"CRIU_AMDGPU_LOG_LEVEL", "debug"}});
    EXPECT_EQ(t.settings.mockRoot, "/tmp/m");
    EXPECT_EQ(t.settings.backends, std::vector<std::string>{"mock"});
    EXPECT_EQ(t.settings.deviceMap.size(), 1u);
    EXPECT_TRUE(t.settings.parallelRestore);
    EXPECT_EQ(t.settings.logLevel, 4);
}

TEST(EnvSource, ContentHolesAreOnByDefaultAndTheEnvironmentTurnsThemOff) {
    EXPECT_TRUE(applyEnv({}).settings.contentHoles);
    EXPECT_FALSE(applyEnv({{"CRIU_AMDGPU_CONTENT_HOLES", "false"}}).settings.contentHoles);
}

TEST(EnvSource, ContentCompressionIsNoneByDefaultAndTheEnvironmentSetsItCanonically) {
    EXPECT_EQ(applyEnv({}).settings.contentCompression, "none");
    EXPECT_EQ(applyEnv({{"CRIU_AMDGPU_CONTENT_COMPRESSION", "zstd"}}).settings.contentCompression,
              "zstd:3");
    std::string m = envError({{"CRIU_AMDGPU_CONTENT_COMPRESSION", "zstd:42"}});
    EXPECT_THAT(m, HasSubstr("env CRIU_AMDGPU_CONTENT_COMPRESSION: content-compression: 'zstd:42' "
                             "is not a codec"));
}

TEST(EnvSource, ContentEncryptionIsNoneByDefaultAndTheEnvironmentSetsItNamingBadCiphers) {
    EXPECT_EQ(applyEnv({}).settings.contentEncryption, "none");
    EXPECT_EQ(
        applyEnv({{"CRIU_AMDGPU_CONTENT_ENCRYPTION", "aes-256-gcm"}}).settings.contentEncryption,
        "aes-256-gcm");
    std::string m = envError({{"CRIU_AMDGPU_CONTENT_ENCRYPTION", "aes-128-cbc"}});
    EXPECT_THAT(m, HasSubstr("env CRIU_AMDGPU_CONTENT_ENCRYPTION: content-encryption: "
                             "'aes-128-cbc' is not a cipher"));
}

TEST(EnvSource, CriuAmdgpuNameWinsOverKfdNameAndSaysSo) {
    auto r = readEnvironment({{"KFD_NUMA_CHECK", "0"}, {"CRIU_AMDGPU_NUMA_CHECK", "1"}});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].origin, "env KFD_NUMA_CHECK");
    EXPECT_EQ((*r)[1].origin, "env CRIU_AMDGPU_NUMA_CHECK (overrides KFD_NUMA_CHECK)");
    EXPECT_TRUE(
        applyEnv({{"KFD_NUMA_CHECK", "0"}, {"CRIU_AMDGPU_NUMA_CHECK", "1"}}).settings.checks.numa);
}

TEST(EnvSource, BadKfdValueNamesTheVariable) {
    std::string m = envError({{"KFD_VRAM_SIZE_CHECK", "maybe"}});
    EXPECT_THAT(m, HasSubstr("env KFD_VRAM_SIZE_CHECK: vram-size-check: 'maybe' is not a boolean"));
    EXPECT_THAT(m, HasSubstr("accepted"));
}

TEST(EnvSource, BadKfdValueIsAnErrorEvenWhenOverridden) {
    EXPECT_THAT(envError({{"KFD_NUMA_CHECK", "2"}, {"CRIU_AMDGPU_NUMA_CHECK", "1"}}),
                HasSubstr("env KFD_NUMA_CHECK"));
}

TEST(EnvSource, BadSizeSuffixNamesTheVariable) {
    EXPECT_THAT(envError({{"KFD_MAX_BUFFER_SIZE", "4Z"}}),
                HasSubstr("env KFD_MAX_BUFFER_SIZE: max-buffer-size: bad size suffix 'Z'"));
}

TEST(EnvSource, UnknownCriuAmdgpuVariableSuggestsTheNearestName) {
    std::string m = envError({{"CRIU_AMDGPU_MOCK_ROOOT", "/x"}});
    EXPECT_THAT(m, HasSubstr("env CRIU_AMDGPU_MOCK_ROOOT: unknown environment variable"));
    EXPECT_THAT(m, HasSubstr("did you mean 'CRIU_AMDGPU_MOCK_ROOT'?"));
}

TEST(EnvSource, UnrelatedVariablesAreIgnored) {
    auto r = readEnvironment({{"PATH", "/bin"}, {"KFD_SOMETHING_ELSE", "x"}, {"HOME", "/root"}});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(EnvSource, EmptyPathMeansTheDefault) {
    EXPECT_EQ(applyEnv({{"CRIU_AMDGPU_DEV_ROOT", ""}}).settings.devRoot, "");
}

} // namespace
} // namespace config
