// detectCriuAbi: which criu plugin ABI (hook count, RESTORE_EXT_FILE signature, inventory, plugin
// options) the frontend assumes for a criu hook table, a set of exported symbols and a forced
// value. The table sizes are the ones measured on Debian's builds (nm -D -S ... cr_plugin_ctl):
// 0xd0 bytes in trixie's 4.1.1, 0xe0 in sid's 4.2.1, 0x120 in experimental's 4.3. The e2e
// scenarios check the same against the real binaries, from the plugin's log line.

#include "criu_abi.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

using frontend::CriuAbi;
using frontend::CriuProbe;
using frontend::detectCriuAbi;
using frontend::hookCountOfTableSize;

constexpr const char* kAdd = "add_inventory_plugin";
constexpr const char* kCheck = "check_and_remove_inventory_plugin";
constexpr const char* kOptions = "criu_plugin_get_options";

/// A probe whose criu has a hook table of `hooks` hooks (0: no table) and exports `symbols`.
CriuProbe probe(unsigned hooks, std::set<std::string> symbols = {}, std::string forced = "") {
    CriuProbe p;
    p.hookTableSize = [hooks] { return hooks; };
    p.hasSymbol = [symbols](const char* s) { return symbols.count(s) != 0; };
    p.forced = std::move(forced);
    return p;
}

// -------------------------------------------------------------------- the hook table's size

TEST(HookCountOfTableSize, GivenTheSizesOfDebiansBuilds_ThenTheirHookCounts) {
    EXPECT_EQ(hookCountOfTableSize(0xd0), 12u);  // trixie, criu 4.1.1
    EXPECT_EQ(hookCountOfTableSize(0xe0), 13u);  // sid, criu 4.2.1
    EXPECT_EQ(hookCountOfTableSize(0x120), 17u); // experimental, criu 4.3
    EXPECT_EQ(hookCountOfTableSize(0xb0), 10u);  // 3.17: a head and 10 chains
}

TEST(HookCountOfTableSize, GivenSizesThatAreNoHookTable_ThenZero) {
    for (uint64_t bytes : {0ull, 8ull, 16ull, 0xd8ull, 0x10000ull})
        EXPECT_EQ(hookCountOfTableSize(bytes), 0u) << bytes;
}

// ---------------------------------------------------------------------- by the hook table

TEST(DetectCriuAbi, GivenTenHooks_ThenThe3_17AbiWithoutRetryOrInventory) {
    CriuAbi abi = detectCriuAbi(probe(10));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_FALSE(abi.inventory);
    EXPECT_FALSE(abi.pluginOptions);
    EXPECT_EQ(abi.release, "3.17-3.19");
}

TEST(DetectCriuAbi, GivenTwelveHooksAndTheInventory_Then4_1) {
    CriuAbi abi = detectCriuAbi(probe(12, {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 12u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
    EXPECT_EQ(abi.release, "4.0-4.1");
}

TEST(DetectCriuAbi, GivenThirteenHooks_Then4_2WithPostForkingAndWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe(13, {kAdd, kCheck}));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_TRUE(abi.has(frontend::kPostForking));
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_EQ(abi.release, "4.2");
}

TEST(DetectCriuAbi, GivenFourteenToSixteenHooks_ThenTheDevelopmentBranchWithRetryNeeded) {
    for (unsigned hooks : {14u, 15u, 16u}) {
        CriuAbi abi = detectCriuAbi(probe(hooks, {kAdd, kCheck}));
        EXPECT_EQ(abi.maxHooks, hooks);
        EXPECT_TRUE(abi.retryNeeded) << hooks;
        EXPECT_FALSE(abi.has(frontend::kDumpFinish)) << hooks;
    }
}

TEST(DetectCriuAbi, GivenSeventeenHooksAndPluginOptions_Then4_3WithDumpFinish) {
    CriuAbi abi = detectCriuAbi(probe(17, {kAdd, kCheck, kOptions}));
    EXPECT_EQ(abi.maxHooks, 17u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_TRUE(abi.has(frontend::kDumpFinish));
    EXPECT_TRUE(abi.pluginOptions);
    EXPECT_TRUE(abi.inventory);
    EXPECT_EQ(abi.release, "4.3");
}

TEST(DetectCriuAbi, GivenMoreHooksThanAnyKnownCriu_ThenThe4_3HooksOnly) {
    CriuAbi abi = detectCriuAbi(probe(20, {kOptions}));
    EXPECT_EQ(abi.maxHooks, 17u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_EQ(abi.release, "after 4.3");
}

TEST(DetectCriuAbi, GivenNoHookTable_ThenThe3_17AbiEveryCriuAccepts) {
    CriuAbi abi = detectCriuAbi(probe(0, {kAdd, kCheck, kOptions}));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_NE(abi.how.find("not found"), std::string::npos) << abi.how;
}

TEST(DetectCriuAbi, GivenNoProbeFunctionsAtAll_ThenThe3_17Abi) {
    CriuAbi abi = detectCriuAbi(CriuProbe{});
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.inventory);
}

TEST(DetectCriuAbi, GivenOnlyOneInventorySymbol_ThenNoInventory) {
    EXPECT_FALSE(detectCriuAbi(probe(12, {kAdd})).inventory);
    EXPECT_FALSE(detectCriuAbi(probe(12, {kCheck})).inventory);
}

TEST(DetectCriuAbi, GivenATable_ThenHowSaysItsSize) {
    CriuAbi abi = detectCriuAbi(probe(13));
    EXPECT_NE(abi.how.find("holds 13 hooks"), std::string::npos) << abi.how;
}

// ------------------------------------------------------------------------------ forced

TEST(DetectCriuAbi, GivenForced3_17Under4_3_ThenTenHooksWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe(17, {kOptions, kAdd, kCheck}, "3.17"));
    EXPECT_EQ(abi.maxHooks, 10u);
    EXPECT_FALSE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory) << "the inventory is a fact about criu's symbols";
    EXPECT_NE(abi.how.find("forced"), std::string::npos) << abi.how;
}

TEST(DetectCriuAbi, GivenForced4_2_ThenThirteenHooksWithoutRetry) {
    CriuAbi abi = detectCriuAbi(probe(17, {}, "4.2"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_FALSE(abi.retryNeeded);
}

TEST(DetectCriuAbi, GivenForcedDevOn4_3_ThenTheNewestAbi) {
    CriuAbi abi = detectCriuAbi(probe(17, {}, "dev"));
    EXPECT_EQ(abi.maxHooks, 17u);
    EXPECT_TRUE(abi.retryNeeded);
}

// A development build between 4.2 and RESTORE_INIT has 13 hooks and passes retry_needed; its
// table cannot tell it from 4.2. Forcing "dev" there keeps the 13 hooks and takes retry_needed.
TEST(DetectCriuAbi, GivenForcedDevOnAThirteenHookCriu_ThenClampedToThirteenWithRetryNeeded) {
    CriuAbi abi = detectCriuAbi(probe(13, {}, "dev"));
    EXPECT_EQ(abi.maxHooks, 13u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_NE(abi.how.find("declares 13"), std::string::npos) << abi.how;
}

// More hooks than criu has make criu refuse the plugin ("Corrupted plugin") and abort every run.
TEST(DetectCriuAbi, GivenForcedValueBeyondCriusTable_ThenNeverMoreHooksThanTheTable) {
    for (const char* forced : {"4.3", "dev", "15", "13"}) {
        CriuAbi abi = detectCriuAbi(probe(12, {}, forced));
        EXPECT_EQ(abi.maxHooks, 12u) << forced;
    }
}

TEST(DetectCriuAbi, GivenForcedValueAndNoTable_ThenTheForcedAbi) {
    CriuAbi abi = detectCriuAbi(probe(0, {}, "4.2"));
    EXPECT_EQ(abi.maxHooks, 13u);
}

TEST(DetectCriuAbi, GivenForcedHookCounts_ThenThoseCounts) {
    EXPECT_EQ(detectCriuAbi(probe(0, {}, "10")).maxHooks, 10u);
    EXPECT_EQ(detectCriuAbi(probe(0, {}, "13")).maxHooks, 13u);
    EXPECT_FALSE(detectCriuAbi(probe(0, {}, "13")).retryNeeded);
    EXPECT_EQ(detectCriuAbi(probe(0, {}, "15")).maxHooks, 15u);
    EXPECT_TRUE(detectCriuAbi(probe(0, {}, "15")).retryNeeded);
}

// config::parseCriuAbi rejects such values, so they cannot come from the configuration; if one
// reaches detection anyway it is ignored and the ABI is detected as if nothing was forced.
TEST(DetectCriuAbi, GivenUnrecognisedForcedValue_ThenIgnoredAndDetected) {
    for (const char* forced : {"banana", "4.x", "99", "9", "4", "4.", ".4", "4..1", "4.1.1.1",
                               "4.1a", "1234", "+13", " 13"}) {
        CriuAbi abi = detectCriuAbi(probe(12, {kAdd, kCheck}, forced));
        EXPECT_EQ(abi.maxHooks, 12u) << forced;
        EXPECT_FALSE(abi.retryNeeded) << forced;
        EXPECT_NE(abi.how.find(forced), std::string::npos) << abi.how;
    }
}

TEST(CriuAbiHas, GivenTenHookAbi_WhenAskingForPauseDevices_ThenFalse) {
    CriuAbi abi = detectCriuAbi(probe(10));
    EXPECT_TRUE(abi.has(frontend::kResumeDevicesLate));
    EXPECT_FALSE(abi.has(frontend::kPauseDevices));
}

// The probe of this test process, which is not criu: no hook table, no criu symbols.
TEST(RunningCriuProbe, GivenAProcessThatIsNotCriu_ThenNoTableAndNoSymbols) {
    CriuProbe p = frontend::runningCriuProbe();
    EXPECT_EQ(p.hookTableSize(), 0u);
    EXPECT_FALSE(p.hasSymbol(kAdd));
    EXPECT_TRUE(p.hasSymbol("malloc"));
}

} // namespace
