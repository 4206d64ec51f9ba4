#include "config/value_parsers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using testing::HasSubstr;

namespace config {
namespace {

TEST(ParseBool, AcceptsEverySpellingOfCriusPluginInAnyCase) {
    for (const char* t : {"1", "yes", "YES", "Yes", "true", "TRUE", "on", "ON"})
        EXPECT_TRUE(*parseBool(t)) << t;
    for (const char* f : {"0", "no", "NO", "false", "False", "off", "OFF"})
        EXPECT_FALSE(*parseBool(f)) << f;
}

TEST(ParseBool, RejectsOtherTextListingTheAcceptedValues) {
    for (const char* bad : {"", "2", "y", "enable", "yes "}) {
        auto r = parseBool(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
        EXPECT_THAT(r.error().message(),
                    HasSubstr("accepted: 0, 1, yes, no, true, false, on, off"));
    }
}

TEST(ParseSize, AcceptsPlainBytesAndBinarySuffixes) {
    EXPECT_EQ(*parseSize("0"), 0u);
    EXPECT_EQ(*parseSize("4096"), 4096u);
    EXPECT_EQ(*parseSize("0x1000"), 4096u);
    EXPECT_EQ(*parseSize("1K"), 1024u);
    EXPECT_EQ(*parseSize("1k"), 1024u);
    EXPECT_EQ(*parseSize("3M"), 3u << 20);
    EXPECT_EQ(*parseSize("2G"), 2ull << 30);
    EXPECT_EQ(*parseSize("2T"), 2ull << 40);
    EXPECT_EQ(*parseSize("2GB"), 2ull << 30);
    EXPECT_EQ(*parseSize("2GiB"), 2ull << 30);
    EXPECT_EQ(*parseSize("512B"), 512u);
}

TEST(ParseSize, RejectsABadSuffixNamingTheAcceptedOnes) {
    for (const char* bad : {"2X", "2 G", "2GG", "2Gb2", "2BB", "1P"}) {
        auto r = parseSize(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error().message(), HasSubstr("bad size suffix")) << bad;
        EXPECT_THAT(r.error().message(), HasSubstr("K, M, G, T")) << bad;
    }
}

TEST(ParseSize, RejectsNonNumbersNegativesAndOverflow) {
    EXPECT_THAT(parseSize("").error().message(), HasSubstr("is not a size"));
    EXPECT_THAT(parseSize("G").error().message(), HasSubstr("is not a size"));
    EXPECT_THAT(parseSize("-1").error().message(), HasSubstr("is not a size"));
    EXPECT_THAT(parseSize("99999999999999999999").error().message(), HasSubstr("too large"));
    EXPECT_THAT(parseSize("17000000T").error().message(), HasSubstr("too large"));
}

TEST(FormatSize, UsesTheLargestExactSuffix) {
    EXPECT_EQ(formatSize(0), "0");
    EXPECT_EQ(formatSize(1000), "1000");
    EXPECT_EQ(formatSize(1536), "1536");
    EXPECT_EQ(formatSize(2048), "2K");
    EXPECT_EQ(formatSize(64ull << 20), "64M");
    EXPECT_EQ(formatSize(2ull << 30), "2G");
    EXPECT_EQ(formatSize(1ull << 40), "1T");
}

TEST(ParseBackendList, AutoIsTheEmptyList) {
    EXPECT_TRUE(parseBackendList("auto")->empty());
}

TEST(ParseBackendList, KeepsTheOrderOfPreference) {
    EXPECT_EQ(*parseBackendList("kfd,amdgpu-drm"), (std::vector<std::string>{"kfd", "amdgpu-drm"}));
    EXPECT_EQ(*parseBackendList("mock, kfd"), (std::vector<std::string>{"mock", "kfd"}));
}

TEST(ParseBackendList, AcceptsUnknownButWellFormedNames) {
    EXPECT_EQ(*parseBackendList("future-2"), (std::vector<std::string>{"future-2"}));
}

TEST(ParseBackendList, RejectsMalformedNamesListingTheKnownBackends) {
    auto r = parseBackendList("KFD");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message(), HasSubstr("[a-z0-9-]+"));
    EXPECT_THAT(r.error().message(), HasSubstr("kfd, amdgpu-drm, mock"));
    EXPECT_FALSE(parseBackendList("kfd;mock").ok());
    EXPECT_FALSE(parseBackendList("").ok());
    EXPECT_FALSE(parseBackendList("kfd,,mock").ok());
}

TEST(ParseBackendList, RejectsRepeatsAndAutoInAList) {
    EXPECT_THAT(parseBackendList("kfd,kfd").error().message(), HasSubstr("listed twice"));
    EXPECT_THAT(parseBackendList("auto,kfd").error().message(), HasSubstr("'auto' cannot"));
}

TEST(ParseDeviceMap, ParsesGpuIdAndRenderNodeDestinations) {
    auto r = parseDeviceMap("0x1234=0x5678,0x2222=renderD130,100->200");
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].srcGpuId, 0x1234u);
    EXPECT_EQ((*r)[0].dstGpuId, 0x5678u);
    EXPECT_EQ((*r)[0].dstRenderMinor, -1);
    EXPECT_EQ((*r)[1].srcGpuId, 0x2222u);
    EXPECT_EQ((*r)[1].dstGpuId, 0u);
    EXPECT_EQ((*r)[1].dstRenderMinor, 130);
    EXPECT_EQ((*r)[2].srcGpuId, 100u);
    EXPECT_EQ((*r)[2].dstGpuId, 200u);
}

TEST(ParseDeviceMap, EmptyTextIsTheEmptyMap) {
    EXPECT_TRUE(parseDeviceMap("")->empty());
}

TEST(ParseDeviceMap, FormatsBackToTheSameText) {
    EXPECT_EQ(formatDeviceMap(*parseDeviceMap("0x1234=0x5678, 0x2222 = renderD130")),
              "0x1234=0x5678,0x2222=renderD130");
}

TEST(ParseDeviceMap, RejectsASourceGpuNamedTwice) {
    auto r = parseDeviceMap("0x1234=0x5678,4660=0x9999");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message(), HasSubstr("source GPU 0x1234 is mapped twice"));
}

TEST(ParseDeviceMap, RejectsADestinationNamedTwice) {
    EXPECT_THAT(parseDeviceMap("0x1=0x5678,0x2=0x5678").error().message(),
                HasSubstr("destination GPU 0x5678 is the target of two source GPUs"));
    EXPECT_THAT(parseDeviceMap("0x1=renderD128,0x2=renderD128").error().message(),
                HasSubstr("destination renderD128 is the target of two source GPUs"));
}

TEST(ParseDeviceMap, ReadsALongMapAndFindsARepeatAtItsEnd) {
    // Long lists are read in O(n log n) (config_parse_bench shows the times); the repeat at the
    // end must still be found, naming both sources.
    std::string text;
    for (int i = 1; i <= 50000; ++i) { // appended piece by piece: GCC 12's false -Wrestrict
        if (i > 1)
            text += ',';
        text += std::to_string(i);
        text += '=';
        text += std::to_string(i + 100000);
    }
    auto map = parseDeviceMap(text);
    ASSERT_TRUE(map.ok()) << map.error().describe();
    ASSERT_EQ(map->size(), 50000u);
    EXPECT_EQ(map->back().srcGpuId, 50000u);
    EXPECT_EQ(map->back().dstGpuId, 150000u);
    EXPECT_THAT(parseDeviceMap(text + ",50001=100007").error().message(),
                HasSubstr("destination GPU 0x186a7 is the target of two source GPUs (0x7 and "
                          "0xc351)"));
    EXPECT_THAT(parseDeviceMap(text + ",7=renderD128,8=renderD128").error().message(),
                HasSubstr("source GPU 0x7 is mapped twice"));
}

TEST(ParseBackendList, ReadsALongListAndFindsARepeatAtItsEnd) {
    std::string text;
    for (int i = 0; i < 50000; ++i)
        text += (i ? ",b" : "b") + std::to_string(i);
    auto names = parseBackendList(text);
    ASSERT_TRUE(names.ok()) << names.error().describe();
    EXPECT_EQ(names->size(), 50000u);
    EXPECT_EQ(names->back(), "b49999");
    EXPECT_THAT(parseBackendList(text + ",b17").error().message(),
                HasSubstr("backend 'b17' is listed twice"));
}

TEST(ParseDeviceMap, RejectsMalformedEntries) {
    EXPECT_THAT(parseDeviceMap("0x1234").error().message(), HasSubstr("is not SRC=DST"));
    EXPECT_THAT(parseDeviceMap("gpu0=0x1").error().message(), HasSubstr("is not a gpu_id"));
    EXPECT_THAT(parseDeviceMap("0x1=renderDx").error().message(), HasSubstr("renderD<minor>"));
    EXPECT_THAT(parseDeviceMap("0x1=card0").error().message(), HasSubstr("renderD<minor>"));
    EXPECT_THAT(parseDeviceMap("0=0x1").error().message(), HasSubstr("gpu_id 0"));
    EXPECT_THAT(parseDeviceMap("0x100000000=0x1").error().message(), HasSubstr("32-bit"));
}

TEST(ParseLogLevel, AcceptsNumbersAndNames) {
    EXPECT_EQ(*parseLogLevelValue("0"), 0);
    EXPECT_EQ(*parseLogLevelValue("4"), 4);
    EXPECT_EQ(*parseLogLevelValue("info"), 3);
    EXPECT_EQ(*parseLogLevelValue("DEBUG"), 4);
}

TEST(ParseLogLevel, RejectsOthersListingTheAcceptedValues) {
    auto r = parseLogLevelValue("verbose");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message(), HasSubstr("0-4 or msg, error, warn, info, debug"));
    EXPECT_FALSE(parseLogLevelValue("5").ok());
}

TEST(ParseCriuAbi, AcceptsReleasesDevAndHookCounts) {
    for (const char* ok :
         {"", "dev", "3.17", "3.19", "4.0", "4.2", "4.2.1", "5.0", "10", "13", "15"})
        EXPECT_TRUE(parseCriuAbi(ok).ok()) << ok;
}

TEST(ParseCriuAbi, RejectsOthersListingTheAcceptedValues) {
    for (const char* bad : {"3.16", "9", "16", "0xa", "4.", "4.x", "latest", "v4.2", "4.2.1.1"}) {
        auto r = parseCriuAbi(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error().message(), HasSubstr("hook count 10-15")) << bad;
    }
}

TEST(ParseCompression, GivesTheCanonicalTextOfEachCodec) {
    EXPECT_EQ(*parseCompression("none"), "none");
    EXPECT_EQ(*parseCompression("lz4"), "lz4");
    EXPECT_EQ(*parseCompression("zstd"), "zstd:3");
    EXPECT_EQ(*parseCompression("zstd:19"), "zstd:19");
}

TEST(ParseCompression, RejectsOthersListingTheAcceptedValues) {
    for (const char* bad : {"", "gzip", "zstd:0", "zstd:20", "zstd:3x", "ZSTD"}) {
        auto r = parseValue(OptionType::Compression, bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
        std::string quoted = "'";
        quoted.append(bad);
        quoted += "' is not a codec";
        EXPECT_THAT(r.error().message(), HasSubstr(quoted));
        EXPECT_THAT(r.error().message(), HasSubstr("zstd:LEVEL with LEVEL 1 to 19")) << bad;
    }
}

TEST(FormatValue, RoundTripsThroughParseValue) {
    for (auto [type, text] :
         std::vector<std::pair<OptionType, std::string>>{{OptionType::Bool, "true"},
                                                         {OptionType::Size, "2G"},
                                                         {OptionType::Path, "/x/y"},
                                                         {OptionType::BackendList, "kfd,mock"},
                                                         {OptionType::BackendList, "auto"},
                                                         {OptionType::DeviceMap, "0x1=renderD129"},
                                                         {OptionType::LogLevel, "debug"},
                                                         {OptionType::Compression, "zstd:9"}}) {
        auto v = parseValue(type, text);
        ASSERT_TRUE(v.ok()) << text;
        EXPECT_EQ(formatValue(*v), text);
    }
}

} // namespace
} // namespace config
