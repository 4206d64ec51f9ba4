#include "config/sources.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;

namespace config {
namespace {

const char* const kFile = "/etc/criu/amdgpu.conf";

OptionTarget applyText(const std::string& text) {
    auto r = parseOptionsText(text, kFile);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    OptionTarget t;
    if (r.ok())
        for (const Assignment& a : *r)
            assignOption(*a.spec, t, a.value);
    return t;
}

std::string parseError(const std::string& text) {
    auto r = parseOptionsText(text, kFile);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? "" : r.error().message();
}

TEST(OptionsFile, BareFlagMeansTrue) {
    EXPECT_TRUE(
        applyText("plugin-opt amdgpu:force-single-gpu-restore\n").settings.forceSingleGpuRestore);
}

TEST(OptionsFile, AcceptsEverySpelling) {
    for (const char* line :
         {"plugin-opt amdgpu:numa-check=0", "plugin-option amdgpu.numa-check=0",
          "--plugin-opt amdgpu:numa-check=0", "--plugin-opt=amdgpu:numa-check=0",
          "plugin-opt=amdgpu.numa-check=no", "  plugin-opt   amdgpu:numa-check=off  # why",
          "plugin-opt \"amdgpu:numa-check=0\"", "plugin-opt amdgpu_plugin:numa-check=0"})
        EXPECT_FALSE(applyText(line).settings.checks.numa) << line;
}

TEST(OptionsFile, SizeWithSuffix) {
    EXPECT_EQ(applyText("plugin-opt amdgpu:max-buffer-size=2G").settings.maxBufferSize, 2ull << 30);
}

TEST(OptionsFile, QuotedValueKeepsSpaces) {
    EXPECT_EQ(applyText("plugin-opt amdgpu:mock-root=\"/tmp/a b\"").settings.mockRoot, "/tmp/a b");
}

TEST(OptionsFile, CommentsAndBlankLinesAreSkipped) {
    auto r = parseOptionsText("# header\n\n   \n# plugin-opt amdgpu:bogus\n", kFile);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->empty());
}

TEST(OptionsFile, OriginIsFileAndLine) {
    auto r = parseOptionsText("# c\nplugin-opt amdgpu:numa-check=0\n", kFile);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].origin, "/etc/criu/amdgpu.conf:2");
}

TEST(OptionsFile, LaterLineWins) {
    EXPECT_TRUE(applyText("plugin-opt amdgpu:numa-check=0\nplugin-opt amdgpu:numa-check=1\n")
                    .settings.checks.numa);
}

TEST(OptionsFile, OtherPluginsAreIgnored) {
    auto r = parseOptionsText("plugin-opt cuda:whatever=1\nplugin-option other.x\n", kFile);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->empty());
}

TEST(OptionsFile, OtherCriuOptionIsAnErrorNamingFileAndLine) {
    std::string m = parseError("plugin-opt amdgpu:numa-check=0\ntcp-established\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.conf:2: 'tcp-established' is not a plugin option"));
}

TEST(OptionsFile, MisspeltPluginOptSuggestsTheSpelling) {
    EXPECT_THAT(parseError("plugn-opt amdgpu:numa-check=0\n"),
                HasSubstr("did you mean 'plugin-opt'?"));
}

TEST(OptionsFile, AmdgpuOptionWithoutPluginOptShowsTheRightLine) {
    EXPECT_THAT(parseError("numa-check=0\n"), HasSubstr("write 'plugin-opt amdgpu:numa-check=0'"));
}

TEST(OptionsFile, UnknownOptionNamesLineAndNearestName) {
    std::string m = parseError("\nplugin-opt amdgpu:numa-chek=0\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.conf:2"));
    EXPECT_THAT(m, HasSubstr("unknown option 'numa-chek'; did you mean 'numa-check'?"));
}

TEST(OptionsFile, BadValueNamesLineOptionAndAcceptedValues) {
    std::string m = parseError("plugin-opt amdgpu:max-buffer-size=2X\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.conf:1: max-buffer-size: bad size suffix 'X'"));
}

TEST(OptionsFile, ValueLessNonBoolIsAnError) {
    EXPECT_THAT(parseError("plugin-opt amdgpu:max-buffer-size\n"),
                HasSubstr("max-buffer-size needs a value"));
}

TEST(OptionsFile, MissingArgumentIsAnError) {
    EXPECT_THAT(parseError("plugin-opt\n"), HasSubstr("needs an argument"));
}

TEST(OptionsFile, ValueAsASeparateWordIsAnError) {
    EXPECT_THAT(parseError("plugin-opt amdgpu:max-buffer-size 2G\n"), HasSubstr("unexpected '2G'"));
}

TEST(OptionsFile, ArgumentWithoutPluginIsAnError) {
    EXPECT_THAT(parseError("plugin-opt numa-check=0\n"), HasSubstr("is not PLUGIN:NAME[=VALUE]"));
}

TEST(OptionsFile, UnterminatedQuoteIsAnError) {
    EXPECT_THAT(parseError("plugin-opt \"amdgpu:numa-check=0\n"), HasSubstr("unterminated"));
}

TEST(OptionsFile, CannotNameAnotherOptionsFile) {
    EXPECT_THAT(parseError("plugin-opt amdgpu:options-file=/x.conf\n"),
                HasSubstr("'options-file' cannot be set in the options file"));
}

TEST(OptionsFile, MissingFileIsFineUnlessNamed) {
    testsupport::TempDir dir;
    auto absent = readOptionsFile(dir / "absent.conf", false);
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->present);
    auto named = readOptionsFile(dir / "absent.conf", true);
    ASSERT_FALSE(named.ok());
    EXPECT_EQ(named.error().code(), base::ErrorCode::Config);
    EXPECT_THAT(named.error().message(), HasSubstr("absent.conf"));
}

} // namespace
} // namespace config
