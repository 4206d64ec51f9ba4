#include "config/config.h"
#include "config/option_table.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

using testing::HasSubstr;

namespace config {
namespace {

// Sources reading only what a test puts in its temporary directory and its env map.
class LoaderTest : public testing::Test {
protected:
    LoaderTest() {
        sources_.env = std::map<std::string, std::string>{};
        sources_.defaultYamlPath = dir_ / "amdgpu.yaml";
        sources_.defaultOptionsPath = dir_ / "amdgpu.conf";
    }

    LoadedConfig load() {
        auto r = loadConfig(sources_);
        EXPECT_TRUE(r.ok()) << r.error().describe();
        return r.ok() ? *r : LoadedConfig{};
    }

    std::string loadError() {
        auto r = loadConfig(sources_);
        EXPECT_FALSE(r.ok());
        if (r.ok())
            return "";
        EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
        return r.error().message();
    }

    std::string origin(const LoadedConfig& c, const char* name) { return c.find(name)->origin; }
    std::string value(const LoadedConfig& c, const char* name) { return c.find(name)->value; }

    testsupport::TempDir dir_;
    Sources sources_;
};

TEST_F(LoaderTest, NoSourcesGiveTheDefaults) {
    LoadedConfig c = load();
    EXPECT_TRUE(c.settings.checks.numa);
    EXPECT_TRUE(c.settings.backends.empty());
    EXPECT_EQ(c.settings.logLevel, -1);
    EXPECT_EQ(c.options.size(), optionTable().size());
    for (const EffectiveOption& o : c.options)
        EXPECT_THAT(o.origin, testing::StartsWith("default")) << o.name;
    EXPECT_FALSE(c.yamlPresent);
    EXPECT_FALSE(c.optionsPresent);
}

TEST_F(LoaderTest, MissingDefaultFilesAreShownAsNotPresent) {
    LoadedConfig c = load();
    EXPECT_EQ(value(c, "config"), dir_ / "amdgpu.yaml");
    EXPECT_EQ(origin(c, "config"), "default (file not present)");
    EXPECT_EQ(origin(c, "options-file"), "default (file not present)");
}

TEST_F(LoaderTest, DefaultFilesAreReadWhenPresent) {
    testsupport::writeFile(dir_ / "amdgpu.yaml", "numa_check: false\n");
    testsupport::writeFile(dir_ / "amdgpu.conf", "plugin-opt amdgpu:vram-size-check=0\n");
    LoadedConfig c = load();
    EXPECT_FALSE(c.settings.checks.numa);
    EXPECT_FALSE(c.settings.checks.vramSize);
    EXPECT_EQ(origin(c, "config"), "default");
    EXPECT_EQ(origin(c, "numa-check"), dir_ / "amdgpu.yaml:1");
    EXPECT_EQ(origin(c, "vram-size-check"), dir_ / "amdgpu.conf:1");
}

TEST_F(LoaderTest, NamedYamlFileThatIsMissingIsAnError) {
    (*sources_.env)["CRIU_AMDGPU_CONFIG"] = dir_ / "nope.yaml";
    auto r = loadConfig(sources_);
    ASSERT_FALSE(r.ok());
    std::string m = r.error().describe();
    EXPECT_THAT(m, HasSubstr("named by env CRIU_AMDGPU_CONFIG"));
    EXPECT_THAT(m, HasSubstr("cannot read YAML file"));
    EXPECT_THAT(m, HasSubstr("nope.yaml"));
}

TEST_F(LoaderTest, NamedOptionsFileThatIsMissingIsAnError) {
    sources_.pluginOptions = {"amdgpu.options-file=" + (dir_ / "nope.conf")};
    auto r = loadConfig(sources_);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("named by plugin option amdgpu.options-file"));
    EXPECT_THAT(r.error().message(), HasSubstr("cannot read options file"));
}

TEST_F(LoaderTest, YamlFileNamedByEnvironmentIsRead) {
    testsupport::writeFile(dir_ / "other.yaml", "exact_gpu_count: true\n");
    (*sources_.env)["CRIU_AMDGPU_CONFIG"] = dir_ / "other.yaml";
    LoadedConfig c = load();
    EXPECT_TRUE(c.settings.exactGpuCount);
    EXPECT_EQ(origin(c, "config"), "env CRIU_AMDGPU_CONFIG");
    EXPECT_TRUE(c.yamlPresent);
}

TEST_F(LoaderTest, PluginOptionConfigBeatsTheEnvironment) {
    testsupport::writeFile(dir_ / "env.yaml", "exact_gpu_count: true\n");
    testsupport::writeFile(dir_ / "plugin.yaml", "parallel_restore: true\n");
    (*sources_.env)["CRIU_AMDGPU_CONFIG"] = dir_ / "env.yaml";
    sources_.pluginOptions = {"amdgpu.config=" + (dir_ / "plugin.yaml")};
    LoadedConfig c = load();
    EXPECT_FALSE(c.settings.exactGpuCount);
    EXPECT_TRUE(c.settings.parallelRestore);
    EXPECT_EQ(c.yamlPath, dir_ / "plugin.yaml");
}

TEST_F(LoaderTest, YamlFileMayNameTheOptionsFile) {
    testsupport::writeFile(dir_ / "amdgpu.yaml", "options_file: " + (dir_ / "x.conf") + "\n");
    testsupport::writeFile(dir_ / "x.conf", "plugin-opt amdgpu:force-single-gpu-restore\n");
    LoadedConfig c = load();
    EXPECT_TRUE(c.settings.forceSingleGpuRestore);
    EXPECT_EQ(c.optionsPath, dir_ / "x.conf");
    EXPECT_EQ(origin(c, "options-file"), dir_ / "amdgpu.yaml:1");
}

TEST_F(LoaderTest, EmptyConfigPathReadsNoYamlFile) {
    testsupport::writeFile(dir_ / "amdgpu.yaml", "numa_check: false\n");
    (*sources_.env)["CRIU_AMDGPU_CONFIG"] = "";
    LoadedConfig c = load();
    EXPECT_TRUE(c.settings.checks.numa);
    EXPECT_FALSE(c.yamlPresent);
}

TEST_F(LoaderTest, EachLayerOverridesTheOnesBelow) {
    // Five options; option k is set by layers 1..k, so each shows the highest layer's value.
    testsupport::writeFile(dir_ / "amdgpu.yaml", "max_buffer_size: 2K\n"
                                                 "log_level: 1\n"
                                                 "mock_root: /yaml\n"
                                                 "backend: kfd\n");
    testsupport::writeFile(dir_ / "amdgpu.conf", "plugin-opt amdgpu:log-level=2\n"
                                                 "plugin-opt amdgpu:mock-root=/conf\n"
                                                 "plugin-opt amdgpu:backend=amdgpu-drm\n");
    (*sources_.env)["CRIU_AMDGPU_MOCK_ROOT"] = "/env";
    (*sources_.env)["CRIU_AMDGPU_BACKEND"] = "mock";
    sources_.pluginOptions = {"amdgpu.backend=kfd,mock"};
    LoadedConfig c = load();
    EXPECT_EQ(c.settings.exactGpuCount, false);
    EXPECT_EQ(origin(c, "exact-gpu-count"), "default");
    EXPECT_EQ(c.settings.maxBufferSize, 2048u);
    EXPECT_EQ(origin(c, "max-buffer-size"), dir_ / "amdgpu.yaml:1");
    EXPECT_EQ(c.settings.logLevel, 2);
    EXPECT_EQ(origin(c, "log-level"), dir_ / "amdgpu.conf:1");
    EXPECT_EQ(c.settings.mockRoot, "/env");
    EXPECT_EQ(origin(c, "mock-root"), "env CRIU_AMDGPU_MOCK_ROOT");
    EXPECT_EQ(c.settings.backends, (std::vector<std::string>{"kfd", "mock"}));
    EXPECT_EQ(value(c, "backend"), "kfd,mock");
    EXPECT_EQ(origin(c, "backend"), "plugin option amdgpu.backend");
}

TEST_F(LoaderTest, KfdVariableOverridesTheFiles) {
    testsupport::writeFile(dir_ / "amdgpu.conf", "plugin-opt amdgpu:numa-check=1\n");
    (*sources_.env)["KFD_NUMA_CHECK"] = "0";
    LoadedConfig c = load();
    EXPECT_FALSE(c.settings.checks.numa);
    EXPECT_EQ(origin(c, "numa-check"), "env KFD_NUMA_CHECK");
}

TEST_F(LoaderTest, ShowOriginSaysCriuAmdgpuOverridesKfd) {
    (*sources_.env)["KFD_NUMA_CHECK"] = "0";
    (*sources_.env)["CRIU_AMDGPU_NUMA_CHECK"] = "yes";
    LoadedConfig c = load();
    EXPECT_TRUE(c.settings.checks.numa);
    EXPECT_EQ(value(c, "numa-check"), "true");
    EXPECT_EQ(origin(c, "numa-check"), "env CRIU_AMDGPU_NUMA_CHECK (overrides KFD_NUMA_CHECK)");
}

TEST_F(LoaderTest, ErrorInYamlIsReportedEvenWhenOverridden) {
    testsupport::writeFile(dir_ / "amdgpu.yaml", "numa_check: perhaps\n");
    sources_.pluginOptions = {"amdgpu.numa-check=1"};
    EXPECT_THAT(loadError(), HasSubstr(dir_ / "amdgpu.yaml:1: numa_check"));
}

TEST_F(LoaderTest, YamlSyntaxErrorFailsTheLoad) {
    testsupport::writeFile(dir_ / "amdgpu.yaml", "numa_check: [\n");
    EXPECT_THAT(loadError(), HasSubstr("YAML syntax error"));
}

TEST_F(LoaderTest, UnknownEnvironmentVariableFailsTheLoad) {
    (*sources_.env)["CRIU_AMDGPU_BAKEND"] = "kfd";
    EXPECT_THAT(loadError(), HasSubstr("did you mean 'CRIU_AMDGPU_BACKEND'?"));
}

TEST_F(LoaderTest, CriuAbiFromTheEnvironmentReachesTheSettings) {
    (*sources_.env)["CRIU_AMDGPU_CRIU_ABI"] = "4.2";
    LoadedConfig c = load();
    EXPECT_EQ(c.settings.criuAbi, "4.2");
    EXPECT_EQ(origin(c, "criu-abi"), "env CRIU_AMDGPU_CRIU_ABI");
}

TEST_F(LoaderTest, LoadSettingsReturnsTheSettings) {
    (*sources_.env)["CRIU_AMDGPU_DEV_ROOT"] = "/fake/dev";
    auto s = loadSettings(sources_);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->devRoot, "/fake/dev");
}

TEST_F(LoaderTest, ShowTableHasOneLinePerOptionWithValueAndOrigin) {
    (*sources_.env)["KFD_MAX_BUFFER_SIZE"] = "1G";
    std::string table = formatShowTable(load());
    EXPECT_THAT(table, testing::StartsWith("OPTION"));
    EXPECT_THAT(table, testing::ContainsRegex("max-buffer-size +1G +env KFD_MAX_BUFFER_SIZE\n"));
    EXPECT_THAT(table, testing::ContainsRegex("device-map +\"\" +default\n"));
    EXPECT_EQ(std::count(table.begin(), table.end(), '\n'),
              static_cast<long>(optionTable().size()) + 1);
}

TEST_F(LoaderTest, ShowJsonListsNameValueOrigin) {
    sources_.pluginOptions = {"amdgpu.mock-root=/a \"b\""};
    std::string json = formatShowJson(load());
    EXPECT_THAT(json, testing::StartsWith("{\"options\":["));
    EXPECT_THAT(json, HasSubstr("{\"name\":\"mock-root\",\"value\":\"/a \\\"b\\\"\","
                                "\"origin\":\"plugin option amdgpu.mock-root\"}"));
    EXPECT_THAT(json,
                HasSubstr("{\"name\":\"numa-check\",\"value\":\"true\",\"origin\":\"default\"}"));
}

TEST(ProcessEnvironment, FromProcessEnvironmentReadsOurVariables) {
    ASSERT_EQ(setenv("CRIU_AMDGPU_KFD_SYSFS_ROOT", "/fake/sysfs", 1), 0);
    ASSERT_EQ(setenv("KFD_NUMA_CHECK", "0", 1), 0);
    Sources sources = Sources::fromProcessEnvironment();
    unsetenv("CRIU_AMDGPU_KFD_SYSFS_ROOT");
    unsetenv("KFD_NUMA_CHECK");
    ASSERT_TRUE(sources.env.has_value());
    EXPECT_EQ(sources.env->at("CRIU_AMDGPU_KFD_SYSFS_ROOT"), "/fake/sysfs");
    EXPECT_EQ(sources.env->at("KFD_NUMA_CHECK"), "0");
    EXPECT_EQ(sources.env->count("PATH"), 0u);
    sources.defaultYamlPath = "";
    sources.defaultOptionsPath = "";
    auto s = loadSettings(sources);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    EXPECT_EQ(s->kfdSysfsRoot, "/fake/sysfs");
    EXPECT_FALSE(s->checks.numa);
}

} // namespace
} // namespace config
