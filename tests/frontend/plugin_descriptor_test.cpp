// fillDescriptor and CR_PLUGIN_DESC: the descriptor criu verifies must declare exactly the hooks
// the running criu knows, and RESTORE_EXT_FILE with the signature that criu calls.
// core_entry.cpp is compiled into this binary; its session is never initialised here, so every
// hook is inert (-ENOTSUP).

#include "criu_abi.h"
#include "plugin_descriptor.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" void criu_amdgpu_core_describe(CriuPluginDesc* desc, const char* dir) noexcept;

namespace {

using frontend::CriuAbi;
using frontend::CriuProbe;
using frontend::Hook;

/// The hooks the plugin implements.
const std::vector<Hook> kImplemented = {
    frontend::kDumpExtFile,       frontend::kRestoreExtFile,    frontend::kHandleDeviceVma,
    frontend::kUpdateVmaMap,      frontend::kResumeDevicesLate, frontend::kPauseDevices,
    frontend::kCheckpointDevices, frontend::kPostForking,       frontend::kRestoreInit,
    frontend::kDumpDevicesLate,   frontend::kDumpFinish};

/// Hooks of other kinds of state (unix sockets, mounts, links) the plugin never claims.
const std::vector<Hook> kNeverSet = {frontend::kDumpUnixSk,   frontend::kRestoreUnixSk,
                                     frontend::kDumpExtMount, frontend::kRestoreExtMount,
                                     frontend::kDumpExtLink,  frontend::kUpdateInetsk};

CriuAbi forcedAbi(const std::string& forced) {
    CriuProbe probe;
    probe.forced = forced;
    return frontend::detectCriuAbi(probe);
}

/// A descriptor filled for `abi` over garbage, as criu's memory might hold.
CriuPluginDesc filled(const CriuAbi& abi) {
    CriuPluginDesc desc;
    memset(&desc, 0xab, sizeof(desc));
    frontend::fillDescriptor(&desc, abi);
    return desc;
}

struct AbiCase {
    const char* forced;
    unsigned maxHooks;
    bool retryNeeded;
};

void PrintTo(const AbiCase& c, std::ostream* os) {
    *os << "forced criu ABI " << c.forced;
}

class FillDescriptor : public ::testing::TestWithParam<AbiCase> {
protected:
    CriuAbi abi() const { return forcedAbi(GetParam().forced); }
};

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenNamedAmdgpuPluginWithVersion0_2_0) {
    CriuPluginDesc desc = filled(abi());
    ASSERT_NE(desc.name, nullptr);
    EXPECT_STREQ(desc.name, "amdgpu_plugin");
    EXPECT_EQ(desc.version, 0x200u);
    EXPECT_NE(desc.init, nullptr);
    EXPECT_NE(desc.exit, nullptr);
}

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenMaxHooksIsTheAbis) {
    ASSERT_EQ(abi().maxHooks, GetParam().maxHooks);
    EXPECT_EQ(filled(abi()).max_hooks, GetParam().maxHooks);
}

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenNoHookAtOrBeyondMaxHooks) {
    CriuPluginDesc desc = filled(abi());
    for (unsigned h = desc.max_hooks; h < frontend::kHookSlots; ++h)
        EXPECT_EQ(desc.hooks[h], nullptr) << "hook " << h;
}

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenEveryImplementedHookBelowMaxHooksIsSet) {
    CriuPluginDesc desc = filled(abi());
    for (Hook h : kImplemented) {
        if (static_cast<unsigned>(h) < desc.max_hooks) {
            EXPECT_NE(desc.hooks[h], nullptr) << "hook " << h;
        }
    }
}

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenSocketMountAndLinkHooksAreNeverSet) {
    CriuPluginDesc desc = filled(abi());
    for (Hook h : kNeverSet)
        EXPECT_EQ(desc.hooks[h], nullptr) << "hook " << h;
}

TEST_P(FillDescriptor, GivenAbi_WhenRestoreExtFileCalledWithItsSignature_ThenInertAnswer) {
    CriuPluginDesc desc = filled(abi());
    ASSERT_NE(desc.hooks[frontend::kRestoreExtFile], nullptr);
    if (GetParam().retryNeeded) {
        auto hook = reinterpret_cast<int (*)(int, bool*)>(desc.hooks[frontend::kRestoreExtFile]);
        bool retryNeeded = true;
        EXPECT_EQ(hook(42, &retryNeeded), -ENOTSUP);
        EXPECT_FALSE(retryNeeded) << "criu leaves retry_needed uninitialised: the plugin sets it";
    } else {
        auto hook = reinterpret_cast<int (*)(int)>(desc.hooks[frontend::kRestoreExtFile]);
        EXPECT_EQ(hook(42), -ENOTSUP);
    }
}

TEST_P(FillDescriptor, GivenAbi_WhenFilled_ThenRestoreExtFileSignatureFollowsRetryNeeded) {
    CriuAbi withRetry = forcedAbi("dev");
    ASSERT_TRUE(withRetry.retryNeeded);
    void* retryFunction = filled(withRetry).hooks[frontend::kRestoreExtFile];
    void* hook = filled(abi()).hooks[frontend::kRestoreExtFile];
    if (GetParam().retryNeeded)
        EXPECT_EQ(hook, retryFunction);
    else
        EXPECT_NE(hook, retryFunction);
}

INSTANTIATE_TEST_SUITE_P(CriuReleases, FillDescriptor,
                         ::testing::Values(AbiCase{"3.17", 10, false}, AbiCase{"4.0", 12, false},
                                           AbiCase{"4.1", 12, false}, AbiCase{"4.2", 13, false},
                                           AbiCase{"13", 13, false}, AbiCase{"15", 15, true},
                                           AbiCase{"4.3", 17, true}, AbiCase{"dev", 17, true}),
                         [](const ::testing::TestParamInfo<AbiCase>& info) {
                             std::string name = std::string("criu_") + info.param.forced;
                             for (char& c : name)
                                 if (c == '.')
                                     c = '_';
                             return name;
                         });

TEST(FillDescriptor,
     GivenFifteenHooksWithoutRetryNeeded_WhenFilled_ThenRestoreExtFileTakesOnlyTheId) {
    CriuAbi abi = forcedAbi("dev");
    abi.retryNeeded = false;
    CriuPluginDesc desc = filled(abi);
    EXPECT_NE(desc.hooks[frontend::kRestoreExtFile],
              filled(forcedAbi("dev")).hooks[frontend::kRestoreExtFile]);
    EXPECT_EQ(desc.hooks[frontend::kRestoreExtFile],
              filled(forcedAbi("3.17")).hooks[frontend::kRestoreExtFile]);
}

TEST(FillDescriptor, GivenInertSession_WhenHooksCalledThroughTheDescriptor_ThenEachAnswersENOTSUP) {
    CriuPluginDesc desc = filled(forcedAbi("dev"));
    struct stat st = {};
    uint64_t newPgoff = 7;
    int pluginFd = -1;
    EXPECT_EQ(reinterpret_cast<int (*)(int, int)>(desc.hooks[frontend::kDumpExtFile])(0, 3),
              -ENOTSUP);
    EXPECT_EQ(reinterpret_cast<int (*)(int, const struct stat*)>(
                  desc.hooks[frontend::kHandleDeviceVma])(0, &st),
              -ENOTSUP);
    EXPECT_EQ(reinterpret_cast<int (*)(const char*, uint64_t, uint64_t, uint64_t*, int*)>(
                  desc.hooks[frontend::kUpdateVmaMap])("/dev/dri/renderD128", 0x1000, 0, &newPgoff,
                                                       &pluginFd),
              -ENOTSUP);
    for (Hook h : {frontend::kResumeDevicesLate, frontend::kPauseDevices,
                   frontend::kCheckpointDevices, frontend::kDumpDevicesLate, frontend::kDumpFinish})
        EXPECT_EQ(reinterpret_cast<int (*)(int)>(desc.hooks[h])(1), -ENOTSUP) << "hook " << h;
    for (Hook h : {frontend::kPostForking, frontend::kRestoreInit})
        EXPECT_EQ(reinterpret_cast<int (*)()>(desc.hooks[h])(), -ENOTSUP) << "hook " << h;
    EXPECT_EQ(newPgoff, 7u);
}

// What amdgpu_plugin.so's constructor calls, in a process that is not criu (no hook table, no
// criu symbols): the 3.17 ABI, which every criu accepts.
TEST(CoreDescribe, GivenProcessWithoutCriu_WhenCalled_ThenDescribes3_17Abi) {
    CriuPluginDesc desc;
    memset(&desc, 0xab, sizeof(desc));
    criu_amdgpu_core_describe(&desc, "/some/plugin/dir");
    ASSERT_NE(desc.name, nullptr);
    EXPECT_STREQ(desc.name, "amdgpu_plugin");
    EXPECT_EQ(desc.version, 0x200u);
    EXPECT_EQ(desc.max_hooks, 10u);
    EXPECT_NE(desc.hooks[frontend::kDumpExtFile], nullptr);
    EXPECT_EQ(desc.hooks[frontend::kPauseDevices], nullptr);
}

/// Sources with `env` as the whole environment and no configuration files.
config::Sources sourcesWith(std::map<std::string, std::string> env) {
    config::Sources sources;
    sources.env = std::move(env);
    sources.defaultYamlPath = "";
    sources.defaultOptionsPath = "";
    return sources;
}

CriuProbe tableProbe(unsigned hooks) {
    CriuProbe p;
    p.hookTableSize = [hooks] { return hooks; };
    p.hasSymbol = [](const char*) { return false; };
    return p;
}

TEST(DescribeSelf, GivenCriu4_3sHookTable_WhenDescribing_ThenSeventeenHooksWithDumpFinish) {
    CriuPluginDesc desc;
    memset(&desc, 0xab, sizeof(desc));
    CriuAbi abi = frontend::describeSelf(
        &desc, [] { return tableProbe(17); }, sourcesWith({}));
    EXPECT_EQ(abi.maxHooks, 17u);
    EXPECT_EQ(desc.max_hooks, 17u);
    EXPECT_EQ(desc.version, 0x200u);
    EXPECT_NE(desc.hooks[frontend::kDumpFinish], nullptr);
}

TEST(DescribeSelf, GivenForcedAbiInTheEnvironment_WhenDescribing_ThenTheForcedAbiWithinTheTable) {
    CriuPluginDesc desc;
    CriuAbi abi = frontend::describeSelf(
        &desc, [] { return tableProbe(17); }, sourcesWith({{"CRIU_AMDGPU_CRIU_ABI", "4.2"}}));
    EXPECT_EQ(desc.max_hooks, 13u);
    EXPECT_NE(abi.how.find("forced"), std::string::npos) << abi.how;
}

TEST(DescribeSelf, GivenBrokenConfiguration_WhenDescribing_ThenDetectedAnyway) {
    CriuPluginDesc desc;
    frontend::describeSelf(
        &desc, [] { return tableProbe(13); }, sourcesWith({{"CRIU_AMDGPU_NUMA_CHECK", "maybe"}}));
    EXPECT_EQ(desc.max_hooks, 13u);
}

// The constructor's barrier: an exception while detecting never reaches criu (it would die in
// std::terminate at dlopen); the plugin describes the ABI every criu accepts.
TEST(DescribeSelf, GivenProbeThatThrows_WhenDescribing_ThenThe3_17AbiAndNoException) {
    CriuPluginDesc desc;
    memset(&desc, 0xab, sizeof(desc));
    CriuAbi abi = frontend::describeSelf(
        &desc, []() -> CriuProbe { throw std::runtime_error("probe failed"); }, sourcesWith({}));
    EXPECT_EQ(desc.max_hooks, 10u);
    EXPECT_STREQ(desc.name, "amdgpu_plugin");
    EXPECT_NE(desc.hooks[frontend::kDumpExtFile], nullptr);
    EXPECT_NE(abi.how.find("exception"), std::string::npos) << abi.how;
}

TEST(DescribeSelf, GivenTableSizeThatThrows_WhenDescribing_ThenThe3_17Abi) {
    CriuPluginDesc desc;
    frontend::describeSelf(
        &desc,
        [] {
            CriuProbe p;
            p.hookTableSize = []() -> unsigned { throw std::bad_alloc(); };
            return p;
        },
        sourcesWith({}));
    EXPECT_EQ(desc.max_hooks, 10u);
}

} // namespace
