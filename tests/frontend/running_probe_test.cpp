// runningCriuProbe in a process that exports what criu 4.3 exports: a hook table (cr_plugin_ctl)
// of 17 hooks, the inventory functions and criu_plugin_get_options. This binary is linked with
// -rdynamic, as criu is, so the probe reads them the way it does inside criu: from the dynamic
// symbol table, without reading any file.

#include "criu_abi.h"

#include <gtest/gtest.h>

#include <cstddef>

extern "C" {
/// criu's cr_plugin_ctl_t for CR_PLUGIN_HOOK__MAX = 17: a list head, then one per hook.
struct CriuListHead {
    CriuListHead* next;
    CriuListHead* prev;
};
struct CriuPluginCtl {
    CriuListHead head;
    CriuListHead hookChain[17];
};
// Not instrumented: ASan would pad it with a redzone that the symbol size then includes (clang
// takes no_sanitize on a variable; GCC warns that it ignores it).
#if defined(__clang__)
#define CRIU_AMDGPU_NO_ASAN_PADDING __attribute__((no_sanitize("address")))
#else
#define CRIU_AMDGPU_NO_ASAN_PADDING
#endif
__attribute__((visibility("default"), used))
CRIU_AMDGPU_NO_ASAN_PADDING CriuPluginCtl cr_plugin_ctl;
__attribute__((visibility("default"), used)) int add_inventory_plugin(const char*) {
    return 0;
}
__attribute__((visibility("default"), used)) bool check_and_remove_inventory_plugin(const char*) {
    return true;
}
__attribute__((visibility("default"), used)) int criu_plugin_get_options(int*, char***) {
    return 0;
}
}

namespace {

TEST(RunningCriuProbe, GivenAnExportedHookTableOf17_ThenTheProbeReads17) {
    static_assert(sizeof(CriuPluginCtl) == 0x120, "criu 4.3's table is 0x120 bytes");
    frontend::CriuProbe probe = frontend::runningCriuProbe();
    EXPECT_EQ(probe.hookTableSize(), 17u);
}

TEST(RunningCriuProbe, GivenCriu4_3sSymbols_ThenThe4_3Abi) {
    frontend::CriuAbi abi = frontend::detectCriuAbi(frontend::runningCriuProbe());
    EXPECT_EQ(abi.maxHooks, 17u);
    EXPECT_TRUE(abi.retryNeeded);
    EXPECT_TRUE(abi.inventory);
    EXPECT_TRUE(abi.pluginOptions);
    EXPECT_EQ(abi.release, "4.3");
}

} // namespace
