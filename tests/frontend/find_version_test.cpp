// findVersionString: the criu version string found in the bytes of a criu executable.

#include "criu_abi.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace {

using frontend::findVersionString;

/// The pieces joined by NUL bytes, with a leading NUL (as strings sit in .rodata).
std::string nulSeparated(std::initializer_list<std::string> pieces) {
    std::string out(1, '\0');
    for (const std::string& p : pieces) {
        out += p;
        out += '\0';
    }
    return out;
}

TEST(FindVersionString, GivenOneVersionBetweenNuls_WhenSearching_ThenFound) {
    std::string bytes = "\x7f"
                        "ELF" +
                        nulSeparated({"criu", "--version", "4.1.1", "Version: %s"});
    EXPECT_EQ(findVersionString(bytes), "4.1.1");
}

TEST(FindVersionString, GivenTwoPartVersion_WhenSearching_ThenFound) {
    EXPECT_EQ(findVersionString(nulSeparated({"x", "3.19", "y"})), "3.19");
}

TEST(FindVersionString, GivenSameVersionTwice_WhenSearching_ThenFound) {
    EXPECT_EQ(findVersionString(nulSeparated({"4.2", "text", "4.2"})), "4.2");
}

TEST(FindVersionString, GivenTwoDifferentCandidates_WhenSearching_ThenEmpty) {
    EXPECT_EQ(findVersionString(nulSeparated({"4.1.1", "text", "1.0"})), "");
}

TEST(FindVersionString, GivenNoCandidate_WhenSearching_ThenEmpty) {
    EXPECT_EQ(findVersionString(nulSeparated({"criu", "Version: %s", "GLIBC_2.34", "1.2.3.4"})),
              "");
}

TEST(FindVersionString, GivenEmptyInput_WhenSearching_ThenEmpty) {
    EXPECT_EQ(findVersionString(""), "");
}

TEST(FindVersionString, GivenVersionPrecededByTextNotNul_WhenSearching_ThenIgnored) {
    std::string bytes = nulSeparated({"x"}) + "v4.1.1" + std::string(1, '\0');
    EXPECT_EQ(findVersionString(bytes), "");
}

TEST(FindVersionString, GivenVersionAtStartOfInput_WhenSearching_ThenIgnored) {
    std::string bytes = std::string("4.1.1") + '\0' + "rest" + '\0';
    EXPECT_EQ(findVersionString(bytes), "");
}

TEST(FindVersionString, GivenVersionFollowedByText_WhenSearching_ThenIgnored) {
    EXPECT_EQ(findVersionString(nulSeparated({"4.1.1-rc1", "libc.so.6"})), "");
}

TEST(FindVersionString,
     GivenIgnoredStringsBesideOneVersion_WhenSearching_ThenOnlyTheStandaloneOneCounts) {
    std::string bytes = nulSeparated({"v3.17", "4.0.1"}) + "x3.19" + std::string(1, '\0');
    EXPECT_EQ(findVersionString(bytes), "4.0.1");
}

/// A criu executable on this machine: the usual install paths, or the one scripts/get-criu.sh
/// unpacks (CRIU_AMDGPU_CRIU_DIR, default /opt/criu-amdgpu/criu).
std::string findCriuExecutable() {
    std::vector<std::string> candidates = {"/usr/sbin/criu", "/usr/local/sbin/criu",
                                           "/usr/bin/criu", "/usr/local/bin/criu"};
    if (const char* dir = getenv("CRIU_AMDGPU_CRIU_DIR"); dir && *dir)
        candidates.push_back(std::string(dir) + "/root/usr/sbin/criu");
    candidates.push_back("/opt/criu-amdgpu/criu/root/usr/sbin/criu");
    for (const std::string& path : candidates) {
        std::ifstream in(path, std::ios::binary);
        char magic[4] = {};
        if (in.read(magic, 4) && std::string(magic, 4) == "\x7f"
                                                          "ELF")
            return path;
    }
    return {};
}

TEST(FindVersionString, GivenRealCriuExecutable_WhenSearching_ThenFindsAVersion) {
    std::string path = findCriuExecutable();
    if (path.empty())
        GTEST_SKIP() << "no criu executable on this machine";
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty()) << path;
    std::string version = findVersionString(bytes);
    EXPECT_TRUE(std::regex_match(version, std::regex("[3-9]\\.[0-9]+(\\.[0-9]+)?")))
        << path << " gave '" << version << "'";
}

} // namespace

namespace {

std::string nulJoined(std::initializer_list<const char*> parts) {
    std::string out(1, '\0');
    for (const char* p : parts) {
        out += p;
        out += '\0';
    }
    return out;
}

TEST(FindGitDescribe, GivenOneDescribeString_ThenItIsFound) {
    EXPECT_EQ(frontend::findGitDescribe(nulJoined({"4.2", "v4.2-37-g1a2b3c4", "GitID: %s"})),
              "v4.2-37-g1a2b3c4");
}

TEST(FindGitDescribe, GivenAReleaseBuildWithGitIdZero_ThenNothingIsFound) {
    EXPECT_EQ(frontend::findGitDescribe(nulJoined({"4.1.1", "0", "Version: %s"})), "");
}

TEST(FindGitDescribe, GivenTwoDifferentDescribeStrings_ThenNothingIsFound) {
    EXPECT_EQ(frontend::findGitDescribe(nulJoined({"v4.2-1-gabcdef0", "v4.1-9-g0123456"})), "");
}

} // namespace
