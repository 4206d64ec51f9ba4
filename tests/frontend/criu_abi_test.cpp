// detectCriuAbi: which criu plugin ABI (hook count, RESTORE_EXT_FILE signature, inventory, plugin
// options) the frontend assumes for a version string, a set of exported symbols and a forced value.

#include "criu_abi.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

namespace {

using frontend::CriuAbi;
using frontend::CriuProbe;
using frontend::detectCriuAbi;

constexpr const char* kAdd = "add_inventory_plugin";
constexpr const char* kCheck = "check_and_remove_inventory_plugin";
constexpr const char* kOptions = "criu_plugin_get_options";

/// A probe answering `version` (and git id `gitId`) and exporting exactly `symbols`.
CriuProbe probe(std::string version, std::set<std::string> symbols = {}, std::string forced = "",
                std::string gitId = "") {
    CriuProbe p;
    p.versionString = [version] { return version; };
    p.gitId = [gitId] { return gitId; };
    p.hasSymbol = [symbols](const char* s) { return symbols.count(s) != 0; };
    p.forced = std::move(forced);
    return p;
}

// ------------------------------------------------------------------------ by version string

TEST(DetectCriuAbi, GivenVersion3_17_1_WhenDetecting_ThenTenHooksWithoutRetryOrInventory) {
    CriuAbi abi = detectCriuAbi(probe("3.17.1"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
    EXPECT_FALSE(abi.pluginOptions);
}

TEST(DetectCriuAbi, GivenVersion3_19_WhenDetecting_ThenTenHooks) {
    CriuAbi abi = detectCriuAbi(probe("3.19"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_0_WhenDetecting_ThenTwelveHooksWithoutInventory) {
    CriuAbi abi = detectCriuAbi(probe("4.0"));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi,
     GivenVersion4_1_1WithBothInventorySymbols_WhenDetecting_ThenTwelveHooksWithInventory) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_1_1WithoutInventorySymbols_WhenDetecting_ThenNoInventory) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1"));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_1_1WithOnlyAddInventoryPlugin_WhenDetecting_ThenNoInventory) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kAdd}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_1_1WithOnlyCheckAndRemove_WhenDetecting_ThenNoInventory) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kCheck}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_2_WhenDetecting_ThenThirteenHooksWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe("4.2", {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion4_3_WhenDetecting_ThenFifteenHooksWithRetryNeeded) {
    CriuAbi abi = detectCriuAbi(probe("4.3", {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
}

TEST(DetectCriuAbi, GivenVersion5_0_WhenDetecting_ThenFifteenHooksWithRetryNeeded) {
    CriuAbi abi = detectCriuAbi(probe("5.0"));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
}

// ------------------------------------------------------------------------------ by symbols

TEST(DetectCriuAbi,
     GivenPluginOptionsExportedBy4_1_1_WhenDetecting_ThenDevelopmentAbiWithPluginOptions) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kOptions, kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_TRUE(abi.pluginOptions);
    EXPECT_EQ(abi.release, "dev");
}

TEST(DetectCriuAbi, GivenSymbolsRefiningTheVersion_WhenDetecting_ThenHowKeepsTheVersion) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kOptions}));
    EXPECT_NE(abi.how.find("criu version 4.1.1"), std::string::npos) << abi.how;
    EXPECT_NE(abi.how.find(kOptions), std::string::npos) << abi.how;
}

TEST(DetectCriuAbi, GivenPluginOptionsExportedAndVersionUnknown_WhenDetecting_ThenDevelopmentAbi) {
    CriuAbi abi = detectCriuAbi(probe("", {kOptions}));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_TRUE(abi.pluginOptions);
}

TEST(DetectCriuAbi, GivenUnknownVersionAndNoSymbols_WhenDetecting_Then3_17AbiEveryCriuAccepts) {
    CriuAbi abi = detectCriuAbi(probe(""));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_EQ(abi.release, "3.17");
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
    EXPECT_FALSE(abi.pluginOptions);
}

TEST(DetectCriuAbi, GivenNoProbeFunctionsAtAll_WhenDetecting_Then3_17Abi) {
    CriuAbi abi = detectCriuAbi(CriuProbe{});
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbi, GivenUnknownVersionWithAddInventoryPlugin_WhenDetecting_ThenTwelveHooks) {
    CriuAbi abi = detectCriuAbi(probe("", {kAdd}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory) << "check_and_remove_inventory_plugin is missing";
}

TEST(DetectCriuAbi,
     GivenUnknownVersionWithBothInventorySymbols_WhenDetecting_ThenTwelveHooksWithInventory) {
    CriuAbi abi = detectCriuAbi(probe("", {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_TRUE(abi.inventory);
}

TEST(DetectCriuAbi, GivenGarbageVersionString_WhenDetecting_ThenTreatedAsUnknown) {
    CriuAbi abi = detectCriuAbi(probe("banana"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
}

// ------------------------------------------------------------------------------ forced

TEST(DetectCriuAbi, GivenForced3_17UnderDevelopmentCriu_WhenDetecting_ThenForcedValueWins) {
    CriuAbi abi = detectCriuAbi(probe("4.3", {kOptions, kAdd, kCheck}, "3.17"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
    EXPECT_NE(abi.how.find("forced"), std::string::npos) << abi.how;
}

TEST(DetectCriuAbi, GivenForced4_2_WhenDetecting_ThenThirteenHooksWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe("3.17.1", {kAdd, kCheck}, "4.2"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
}

TEST(DetectCriuAbi, GivenForcedDev_WhenDetecting_ThenFifteenHooksWithRetryNeeded) {
    CriuAbi abi = detectCriuAbi(probe("", {}, "dev"));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_EQ(abi.release, "dev");
}

TEST(DetectCriuAbi, GivenForcedHookCount13_WhenDetecting_ThenThirteenHooksWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe("", {}, "13"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbi, GivenForcedHookCount10_WhenDetecting_ThenTenHooks) {
    CriuAbi abi = detectCriuAbi(probe("4.2", {kAdd, kCheck}, "10"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbi, GivenForcedHookCount15_WhenDetecting_ThenFifteenHooksWithRetryNeeded) {
    CriuAbi abi = detectCriuAbi(probe("", {}, "15"));
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
}

TEST(DetectCriuAbi,
     GivenForcedValueAndPluginOptionsExported_WhenDetecting_ThenPluginOptionsUsable) {
    CriuAbi abi = detectCriuAbi(probe("", {kOptions}, "4.2"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_TRUE(abi.pluginOptions);
}

// Forcing chooses the hooks; whether criu can keep an inventory is a fact about its symbols.
TEST(DetectCriuAbi, GivenForced4_2WithoutInventorySymbols_WhenDetecting_ThenNoInventory) {
    CriuAbi abi = detectCriuAbi(probe("", {}, "4.2"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_FALSE(abi.inventory);
}

// config::parseCriuAbi rejects such a value, so it cannot come from the configuration; if it
// reaches detection anyway it must not pick the development ABI (15 hooks are "Corrupted plugin"
// to every released criu, and retry_needed would be written through a garbage pointer): it is
// ignored and the ABI is detected as if nothing was forced.
TEST(DetectCriuAbi, GivenUnrecognisedForcedValue_WhenDetecting_ThenIgnoredAndDetected) {
    CriuAbi abi = detectCriuAbi(probe("4.1.1", {kAdd, kCheck}, "banana"));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
    EXPECT_NE(abi.how.find("banana"), std::string::npos) << abi.how;
}

TEST(DetectCriuAbi, GivenUnrecognisedForcedValueAndNothingKnown_WhenDetecting_Then3_17Abi) {
    CriuAbi abi = detectCriuAbi(probe("", {}, "4.x"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbi, GivenOutOfRangeForcedHookCount_WhenDetecting_ThenIgnoredAndDetected) {
    CriuAbi abi = detectCriuAbi(probe("3.17.1", {}, "16"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(CriuAbiHas, GivenTenHookAbi_WhenAskingForPauseDevices_ThenFalse) {
    CriuAbi abi = detectCriuAbi(probe("3.17.1"));
    EXPECT_TRUE(abi.has(frontend::kResumeDevicesLate));
    EXPECT_FALSE(abi.has(frontend::kPauseDevices));
}

} // namespace

namespace {

frontend::CriuAbi detectWithGit(const char* version, const char* gitId) {
    return detectCriuAbi(probe(version, {kAdd, kCheck}, "", gitId));
}

TEST(DetectCriuAbiFromGit, GivenABuildAfterTheV42Tag_ThenTheDevelopmentBranchAbi) {
    frontend::CriuAbi abi = detectWithGit("4.2", "v4.2-37-g1a2b3c4");
    EXPECT_EQ(abi.maxHooks, 15u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_NE(abi.how.find("v4.2-37-g1a2b3c4"), std::string::npos) << abi.how;
}

TEST(DetectCriuAbiFromGit, GivenABuildAfterTheV41Tag_ThenTheVersionStringDecides) {
    frontend::CriuAbi abi = detectWithGit("4.1.1", "v4.1.1-12-gdeadbee");
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbiFromGit, GivenAReleaseBuild_ThenTheReleaseAbi) {
    frontend::CriuAbi abi = detectWithGit("4.2", "");
    EXPECT_EQ(abi.maxHooks, 13u);
}

} // namespace
