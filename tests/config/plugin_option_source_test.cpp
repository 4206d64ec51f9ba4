#include "config/sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;

namespace config {
namespace {

OptionTarget applyOptions(const std::vector<std::string>& argv) {
    auto r = readPluginOptions(argv);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    OptionTarget t;
    if (r.ok())
        for (const Assignment& a : *r)
            assignOption(*a.spec, t, a.value);
    return t;
}

std::string optionsError(const std::vector<std::string>& argv) {
    auto r = readPluginOptions(argv);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error().message();
}

TEST(PluginOptions, ReadsValuesAndBareFlags) {
    OptionTarget t = applyOptions({"amdgpu.force-single-gpu-restore", "amdgpu.numa-check=0",
                                   "amdgpu:max-buffer-size=1G", "--amdgpu.backend=kfd"});
    EXPECT_TRUE(t.settings.forceSingleGpuRestore);
    EXPECT_FALSE(t.settings.checks.numa);
    EXPECT_EQ(t.settings.maxBufferSize, 1ull << 30);
    EXPECT_EQ(t.settings.backends, std::vector<std::string>{"kfd"});
}

TEST(PluginOptions, ValueMayContainEqualsSigns) {
    OptionTarget t = applyOptions({"amdgpu.device-map=0x1=0x2,0x3=renderD129"});
    ASSERT_EQ(t.settings.deviceMap.size(), 2u);
    EXPECT_EQ(t.settings.deviceMap[1].dstRenderMinor, 129);
}

TEST(PluginOptions, OriginNamesThePluginOption) {
    auto r = readPluginOptions({"amdgpu.numa-check=0"});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].origin, "plugin option amdgpu.numa-check");
}

TEST(PluginOptions, OtherPluginsAreIgnored) {
    auto r = readPluginOptions({"cuda.lock-timeout=3", "foo:bar"});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(PluginOptions, LaterOptionWins) {
    EXPECT_TRUE(applyOptions({"amdgpu.numa-check=0", "amdgpu.numa-check=1"}).settings.checks.numa);
}

TEST(PluginOptions, UnknownOptionNamesItAndTheNearestName) {
    std::string m = optionsError({"amdgpu.force-single-gpu-restor=1"});
    EXPECT_THAT(m, HasSubstr("plugin option amdgpu.force-single-gpu-restor"));
    EXPECT_THAT(m, HasSubstr("did you mean 'force-single-gpu-restore'?"));
}

TEST(PluginOptions, BadValueNamesTheOptionAndAcceptedValues) {
    std::string m = optionsError({"amdgpu.log-level=chatty"});
    EXPECT_THAT(
        m, HasSubstr("plugin option amdgpu.log-level: log-level: 'chatty' is not a log level"));
    EXPECT_THAT(m, HasSubstr("msg, error, warn, info, debug"));
}

// criu 4.3's criu_plugin_get_options hands every plugin the same argv: a program name first,
// then every --plugin-option of every plugin ("--PLUGIN.NAME[=VALUE]").
TEST(PluginOptions, Criu4_3ArgvTakesOnlyTheAmdgpuOptions) {
    OptionTarget t =
        applyOptions({"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=0",
                      "--cuda_plugin.device-map=0=1", "--amdgpu_plugin.backend=mock"});
    EXPECT_FALSE(t.settings.checks.numa);
    EXPECT_EQ(t.settings.backends, std::vector<std::string>{"mock"});
    auto r = readPluginOptions({"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=0"});
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->size(), 1u);
}

TEST(PluginOptions, EntriesNotShapedPluginDotNameAreIgnored) {
    auto r = readPluginOptions({"criu-plugin", "numa-check=0", "--verbose", "", "--", "--=1",
                                "--.numa-check=0", "--amdgpu.", "amdgpu", "--amdgpu=1"});
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->empty());
}

TEST(PluginOptions, BadAmdgpuOptionAmongOthersIsStillAnError) {
    std::string m =
        optionsError({"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=maybe"});
    EXPECT_THAT(m, HasSubstr("plugin option amdgpu.numa-check"));
}

TEST(PluginOptions, DeviceMapNamingADestinationTwiceIsAnError) {
    std::string m = optionsError({"amdgpu.device-map=0x1=0x9,0x2=0x9"});
    EXPECT_THAT(m, HasSubstr("plugin option amdgpu.device-map"));
    EXPECT_THAT(m, HasSubstr("destination GPU 0x9 is the target of two source GPUs"));
}

TEST(PluginOptions, EncryptionOptionsAreReadAsEveryOtherOption) {
    OptionTarget t = applyOptions({"amdgpu.content-encryption=chacha20-poly1305",
                                   "amdgpu.content-certificate=/etc/criu-amdgpu/ck.crt",
                                   "amdgpu.content-private-key=/etc/criu-amdgpu/ck.key"});
    EXPECT_EQ(t.settings.contentEncryption, "chacha20-poly1305");
    EXPECT_EQ(t.settings.contentCertificate, "/etc/criu-amdgpu/ck.crt");
    EXPECT_EQ(t.settings.contentPrivateKey, "/etc/criu-amdgpu/ck.key");
}

} // namespace
} // namespace config
