#include "config/sources.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;

namespace config {
namespace {

OptionTarget apply(const std::vector<Assignment>& assignments) {
    OptionTarget t;
    for (const Assignment& a : assignments)
        assignOption(*a.spec, t, a.value);
    return t;
}

std::vector<Assignment> parseOk(const std::string& text) {
    auto r = parseYamlText(text, "/etc/criu/amdgpu.yaml");
    EXPECT_TRUE(r.ok()) << r.error().describe();
    return r.ok() ? *r : std::vector<Assignment>{};
}

std::string parseError(const std::string& text) {
    auto r = parseYamlText(text, "/etc/criu/amdgpu.yaml");
    EXPECT_FALSE(r.ok()) << text;
    if (r.ok())
        return "";
    EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
    return r.error().message();
}

TEST(YamlSource, SetsEveryKindOfValue) {
    auto a = parseOk("numa_check: false\n"
                     "max_buffer_size: 2G\n"
                     "backend: kfd,amdgpu-drm\n"
                     "mock_root: /tmp/mock\n"
                     "log_level: info\n"
                     "device_map: 0x1234=0x5678\n"
                     "force_single_gpu_restore: yes\n");
    OptionTarget t = apply(a);
    EXPECT_FALSE(t.settings.checks.numa);
    EXPECT_EQ(t.settings.maxBufferSize, 2ull << 30);
    EXPECT_EQ(t.settings.backends, (std::vector<std::string>{"kfd", "amdgpu-drm"}));
    EXPECT_EQ(t.settings.mockRoot, "/tmp/mock");
    EXPECT_EQ(t.settings.logLevel, 3);
    ASSERT_EQ(t.settings.deviceMap.size(), 1u);
    EXPECT_TRUE(t.settings.forceSingleGpuRestore);
}

TEST(YamlSource, SetsTheEncryptionOptions) {
    OptionTarget t = apply(parseOk("content_encryption: aes-256-gcm\n"
                                   "content_certificate: /etc/criu-amdgpu/ck.crt\n"
                                   "content_private_key: /etc/criu-amdgpu/ck.key\n"));
    EXPECT_EQ(t.settings.contentEncryption, "aes-256-gcm");
    EXPECT_EQ(t.settings.contentCertificate, "/etc/criu-amdgpu/ck.crt");
    EXPECT_EQ(t.settings.contentPrivateKey, "/etc/criu-amdgpu/ck.key");
}

TEST(YamlSource, OriginsAreFileAndLine) {
    auto a = parseOk("# comment\nnuma_check: false\n\nlog_level: 4\n");
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].origin, "/etc/criu/amdgpu.yaml:2");
    EXPECT_EQ(a[1].origin, "/etc/criu/amdgpu.yaml:4");
}

TEST(YamlSource, EmptyDocumentSetsNothing) {
    EXPECT_TRUE(parseOk("").empty());
    EXPECT_TRUE(parseOk("# only a comment\n").empty());
}

TEST(YamlSource, BackendMayBeASequence) {
    OptionTarget t = apply(parseOk("backend: [amdgpu-drm, kfd]\n"));
    EXPECT_EQ(t.settings.backends, (std::vector<std::string>{"amdgpu-drm", "kfd"}));
}

TEST(YamlSource, DeviceMapMayBeAMapping) {
    OptionTarget t = apply(parseOk("device_map:\n  0x1234: 0x5678\n  0x2222: renderD130\n"));
    ASSERT_EQ(t.settings.deviceMap.size(), 2u);
    EXPECT_EQ(t.settings.deviceMap[1].dstRenderMinor, 130);
}

TEST(YamlSource, DeviceMapMayBeASequenceOfStringsOrPairs) {
    OptionTarget t = apply(parseOk("device_map:\n"
                                   "  - 0x1234=0x5678\n"
                                   "  - {src: 0x2222, dst: renderD130}\n"));
    ASSERT_EQ(t.settings.deviceMap.size(), 2u);
    EXPECT_EQ(t.settings.deviceMap[0].dstGpuId, 0x5678u);
    EXPECT_EQ(t.settings.deviceMap[1].srcGpuId, 0x2222u);
}

TEST(YamlSource, UnknownKeyNamesLineAndNearestKey) {
    std::string m = parseError("numa_check: true\nnuma_chek: false\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.yaml:2"));
    EXPECT_THAT(m, HasSubstr("unknown key 'numa_chek'"));
    EXPECT_THAT(m, HasSubstr("did you mean 'numa_check'?"));
}

TEST(YamlSource, KebabCaseKeySuggestsTheSnakeCaseKey) {
    EXPECT_THAT(parseError("force-single-gpu-restore: true\n"),
                HasSubstr("did you mean 'force_single_gpu_restore'?"));
}

TEST(YamlSource, WrongTypeNamesLineKeyAndAcceptedValues) {
    std::string m = parseError("log_level: 1\nnuma_check: maybe\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.yaml:2: numa_check: 'maybe' is not a boolean"));
    EXPECT_THAT(m, HasSubstr("accepted: 0, 1, yes, no"));
}

TEST(YamlSource, SequenceForABoolIsAnError) {
    EXPECT_THAT(parseError("numa_check: [1, 2]\n"),
                HasSubstr("numa_check: expected a bool, got a sequence"));
}

TEST(YamlSource, KeyWithoutValueIsAnError) {
    EXPECT_THAT(parseError("numa_check:\n"), HasSubstr("got no value"));
}

TEST(YamlSource, BadSizeSuffixIsAnError) {
    std::string m = parseError("max_buffer_size: 2Q\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.yaml:1: max_buffer_size: bad size suffix 'Q'"));
}

TEST(YamlSource, DeviceMapWithARepeatedSourceNamesTheItemLine) {
    std::string m = parseError("device_map:\n  - 0x1=0x5\n  - 0x1=0x6\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.yaml:3"));
    EXPECT_THAT(m, HasSubstr("source GPU 0x1 is mapped twice"));
}

TEST(YamlSource, DeviceMapWithARepeatedDestinationIsAnError) {
    EXPECT_THAT(parseError("device_map: {0x1: renderD128, 0x2: renderD128}\n"),
                HasSubstr("destination renderD128 is the target of two source GPUs"));
}

TEST(YamlSource, DeviceMapPairWithAnUnknownFieldSuggestsTheField) {
    EXPECT_THAT(parseError("device_map:\n  - {src: 0x1, dts: 0x2}\n"),
                HasSubstr("did you mean 'dst'?"));
}

TEST(YamlSource, SyntaxErrorNamesFileAndLine) {
    std::string m = parseError("numa_check: true\nbackend: [kfd\nlog_level: 2\n");
    EXPECT_THAT(m, HasSubstr("/etc/criu/amdgpu.yaml:"));
    EXPECT_THAT(m, HasSubstr("YAML syntax error"));
}

TEST(YamlSource, KeySetTwiceIsAnError) {
    EXPECT_THAT(parseError("numa_check: true\nnuma_check: false\n"),
                HasSubstr("/etc/criu/amdgpu.yaml:2: key 'numa_check' is set twice"));
}

TEST(YamlSource, TopLevelMustBeAMapping) {
    EXPECT_THAT(parseError("- numa_check\n"), HasSubstr("expected a mapping of option keys"));
}

TEST(YamlSource, ConfigKeyCannotNameAnotherYamlFile) {
    std::string m = parseError("config: /other.yaml\n");
    EXPECT_THAT(m, HasSubstr("'config' cannot be set in the YAML file"));
    EXPECT_THAT(m, HasSubstr("CRIU_AMDGPU_CONFIG"));
}

TEST(YamlSource, MissingFileIsFineUnlessNamed) {
    testsupport::TempDir dir;
    auto absent = readYamlFile(dir / "absent.yaml", false);
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->present);
    auto named = readYamlFile(dir / "absent.yaml", true);
    ASSERT_FALSE(named.ok());
    EXPECT_THAT(named.error().message(), HasSubstr(dir / "absent.yaml"));
    EXPECT_EQ(named.error().sysErrno(), ENOENT);
}

TEST(YamlSource, ReadsAFile) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "a.yaml", "numa_check: off\n");
    auto r = readYamlFile(dir / "a.yaml", true);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->present);
    ASSERT_EQ(r->entries.size(), 1u);
    EXPECT_EQ(r->entries[0].origin, dir / "a.yaml:1");
}

} // namespace
} // namespace config
