#include "config/option_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace config {
namespace {

std::string snake(std::string_view name) {
    std::string s(name);
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

std::string upperSnake(std::string_view name) {
    std::string s = snake(name);
    for (char& c : s)
        c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    return s;
}

TEST(OptionTable, HasEveryOptionOfTheIssue) {
    for (const char* name : {"backend",
                             "backend-dir",
                             "fw-version-check",
                             "sdma-fw-version-check",
                             "caches-count-check",
                             "num-gws-check",
                             "vram-size-check",
                             "numa-check",
                             "capability-check",
                             "large-bar-check",
                             "xgmi-link-check",
                             "peer-link-check",
                             "exact-gpu-count",
                             "device-map",
                             "force-single-gpu-restore",
                             "max-buffer-size",
                             "parallel-restore",
                             "parent-images",
                             "content-holes",
                             "direct-write",
                             "content-compression",
                             "content-encryption",
                             "content-certificate",
                             "content-private-key",
                             "checkpoint-signing-key",
                             "checkpoint-signing-certificate",
                             "trusted-certificates",
                             "content-allow-plaintext",
                             "content-legacy-key-wrap",
                             "mock-root",
                             "kfd-driver",
                             "kfd-sysfs-root",
                             "dev-root",
                             "log-level",
                             "config",
                             "options-file",
                             "criu-abi"})
        EXPECT_NE(findOption(name), nullptr) << name;
    EXPECT_EQ(optionTable().size(), 37u);
}

TEST(OptionTable, YamlKeysAreTheNamesInSnakeCase) {
    for (const OptionSpec& spec : optionTable())
        EXPECT_EQ(spec.yamlKey, snake(spec.name)) << spec.name;
}

TEST(OptionTable, EnvironmentNamesAreCriuAmdgpuPlusUpperSnake) {
    for (const OptionSpec& spec : optionTable())
        EXPECT_EQ(spec.envName, "CRIU_AMDGPU_" + upperSnake(spec.name)) << spec.name;
}

TEST(OptionTable, NamesAreKebabCaseAndUnique) {
    std::set<std::string_view> seen;
    for (const OptionSpec& spec : optionTable()) {
        EXPECT_TRUE(seen.insert(spec.name).second) << spec.name;
        EXPECT_TRUE(std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || c == '-';
        })) << spec.name;
        EXPECT_FALSE(spec.help.empty()) << spec.name;
    }
}

TEST(OptionTable, LegacyNamesAreThoseOfCriusPlugin) {
    EXPECT_EQ(findOptionByLegacyEnv("KFD_FW_VER_CHECK")->name, "fw-version-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_SDMA_FW_VER_CHECK")->name, "sdma-fw-version-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_CACHES_COUNT_CHECK")->name, "caches-count-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_NUM_GWS_CHECK")->name, "num-gws-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_VRAM_SIZE_CHECK")->name, "vram-size-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_NUMA_CHECK")->name, "numa-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_CAPABILITY_CHECK")->name, "capability-check");
    EXPECT_EQ(findOptionByLegacyEnv("KFD_MAX_BUFFER_SIZE")->name, "max-buffer-size");
    EXPECT_EQ(findOptionByLegacyEnv(""), nullptr);
}

TEST(OptionTable, DefaultTextIsWhatTheDefaultsFormatAs) {
    OptionTarget defaults = defaultTarget("/etc/criu/amdgpu.yaml", "/etc/criu/amdgpu.conf");
    for (const OptionSpec& spec : optionTable())
        EXPECT_EQ(formatValue(readOption(spec, defaults)), spec.defaultText) << spec.name;
}

TEST(OptionTable, DefaultTextParsesBackToTheDefault) {
    OptionTarget defaults = defaultTarget("/etc/criu/amdgpu.yaml", "/etc/criu/amdgpu.conf");
    for (const OptionSpec& spec : optionTable()) {
        if (spec.type == OptionType::LogLevel)
            continue; // "unset" is not a level one can set
        auto parsed = parseValue(spec.type, spec.defaultText);
        ASSERT_TRUE(parsed.ok()) << spec.name;
        EXPECT_EQ(parsed->index(), readOption(spec, defaults).index()) << spec.name;
        EXPECT_EQ(formatValue(*parsed), formatValue(readOption(spec, defaults))) << spec.name;
    }
}

TEST(OptionTable, AssignOptionFillsTheBoundField) {
    OptionTarget t;
    assignOption(*findOption("numa-check"), t, TypedValue(false));
    assignOption(*findOption("max-buffer-size"), t, TypedValue(uint64_t(4096)));
    assignOption(*findOption("mock-root"), t, TypedValue(std::string("/m")));
    assignOption(*findOption("log-level"), t, TypedValue(4));
    assignOption(*findOption("options-file"), t, TypedValue(std::string("/o")));
    EXPECT_FALSE(t.settings.checks.numa);
    EXPECT_TRUE(t.settings.checks.vramSize);
    EXPECT_EQ(t.settings.maxBufferSize, 4096u);
    EXPECT_EQ(t.settings.mockRoot, "/m");
    EXPECT_EQ(t.settings.logLevel, 4);
    EXPECT_EQ(t.optionsFile, "/o");
}

TEST(OptionTable, ConfigCanOnlyComeFromTheEnvironmentOrAPluginOption) {
    const OptionSpec* spec = findOption("config");
    EXPECT_FALSE(spec->allows(SourceKind::Yaml));
    EXPECT_FALSE(spec->allows(SourceKind::OptionsFile));
    EXPECT_TRUE(spec->allows(SourceKind::Env));
    EXPECT_TRUE(spec->allows(SourceKind::PluginOption));
    EXPECT_FALSE(findOption("options-file")->allows(SourceKind::OptionsFile));
    EXPECT_TRUE(findOption("options-file")->allows(SourceKind::Yaml));
}

} // namespace
} // namespace config

namespace config {

using settings::kDefaultStagingBufferSize;

namespace {

TEST(OptionTable, MaxBufferSizeHelpStatesTheBuiltInDefault) {
    EXPECT_THAT(std::string(findOption("max-buffer-size")->help),
                testing::HasSubstr("default of " + formatSize(kDefaultStagingBufferSize)));
}

} // namespace
} // namespace config
