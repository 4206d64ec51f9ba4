// Hostile YAML and configuration files: texts on which yaml-cpp 0.7/0.8 loop forever, limits on
// size, nodes and nesting, and files that never end or block. Each input is first parsed in a
// child process with a time limit (and, outside ASan, an address-space limit), so that a loop
// fails the test instead of hanging it.
#include "bounded_child.h"
#include "config/sources.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

using testing::HasSubstr;

namespace config {
namespace {

using testsupport::runBounded;

// The error of parsing `text`, parsed in a bounded child ("" when it parses).
std::string yamlError(const std::string& text) {
    return runBounded([&] {
        auto r = parseYamlText(text, "amdgpu.yaml");
        return r.ok() ? std::string() : r.error().message();
    });
}

// The error of reading `path` as a YAML file, read in a bounded child.
std::string readError(const std::string& path) {
    return runBounded([&] {
        auto r = readYamlFile(path, true);
        return r.ok() ? std::string() : r.error().message();
    });
}

TEST(YamlHostile, GivenAStrayCommaWhereADocumentStarts_ThenAnErrorNamesItsLine) {
    // Each of these makes YAML::LoadAll of yaml-cpp 0.7.0 allocate without end.
    const std::pair<const char*, const char*> cases[] = {
        {",", "amdgpu.yaml:1"},        {"- 1\n,", "amdgpu.yaml:2"},
        {"\"x\" ,", "amdgpu.yaml:1"},  {"&a ,", "amdgpu.yaml:1"},
        {"!t ,", "amdgpu.yaml:1"},     {"---\n,", "amdgpu.yaml:2"},
        {"[1]\n,\n", "amdgpu.yaml:2"}, {"? a\n: b\n---\n,", "amdgpu.yaml:4"},
    };
    for (const auto& [text, where] : cases) {
        std::string m = yamlError(text);
        EXPECT_THAT(m, HasSubstr(where)) << text;
        EXPECT_THAT(m, HasSubstr("unexpected ','")) << text;
    }
}

TEST(YamlHostile, GivenTwoDocuments_ThenTheSecondOneIsNamedEvenWhenAStrayCommaFollows) {
    EXPECT_THAT(yamlError("numa_check: false\n---\nnuma_check: true\n"),
                HasSubstr("amdgpu.yaml:2: more than one YAML document"));
    EXPECT_THAT(yamlError("numa_check: false\n---\n[1]\n,"),
                HasSubstr("amdgpu.yaml:4: YAML syntax error: unexpected ','"));
}

TEST(YamlHostile, GivenTooDeepANesting_ThenAnErrorSaysHowDeep) {
    std::string text = "device_map: " + std::string(40, '[') + std::string(40, ']');
    EXPECT_THAT(yamlError(text), HasSubstr("nested more than 32 deep"));
}

TEST(YamlHostile, GivenTooManyNodes_ThenAnErrorBeforeBuildingThem) {
    std::string text = "device_map: [";
    for (int i = 0; i < 120000; ++i)
        text += "1,";
    text += "]";
    EXPECT_THAT(yamlError(text), HasSubstr("more than 100000 YAML nodes"));
}

TEST(YamlHostile, GivenMoreThanAMebibyte_ThenTheTextIsRefused) {
    std::string text = "numa_check: false\n" + std::string(kMaxConfigFileBytes, '#');
    EXPECT_THAT(yamlError(text), HasSubstr("more than a configuration file may"));
}

TEST(YamlHostile, GivenAFifo_ThenReadingFailsAtOnceInsteadOfWaitingForAWriter) {
    testsupport::TempDir dir;
    std::string fifo = dir / "amdgpu.yaml";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_THAT(readError(fifo),
                HasSubstr("config '" + fifo + "' is not a regular file (it is a FIFO)"));
}

TEST(YamlHostile, GivenADeviceThatNeverEnds_ThenItIsRefusedUnread) {
    EXPECT_THAT(readError("/dev/zero"), HasSubstr("config '/dev/zero' is not a regular file"));
}

TEST(YamlHostile, GivenDevNull_ThenTheFileIsPresentAndEmpty) {
    auto r = readYamlFile("/dev/null", true);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->present);
    EXPECT_TRUE(r->entries.empty());
}

} // namespace
} // namespace config
