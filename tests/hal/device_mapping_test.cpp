// hal::Device::planGpuMapping: the matcher with the settings' rules, over the GPUs the backend
// says it can use, memoised for the whole restore.
#include "mock_device.h"

#include "topology/synth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace {

using base::ErrorCode;
using base::Result;
using haltest::injected;
using haltest::MockDevice;
using ::testing::HasSubstr;
using ::testing::Return;
using ::testing::StrictMock;
using topology::Topology;

using UsableIds = Result<std::optional<std::set<uint32_t>>>;

Topology machine(unsigned gpus, uint32_t gpuIdBase, const char* source) {
    topology::SyntheticSpec spec;
    spec.gpus = gpus;
    spec.gpuIdBase = gpuIdBase;
    Topology t = topology::makeSyntheticTopology(spec);
    t.source = source;
    return t;
}

class DeviceMapping : public ::testing::Test {
protected:
    void expectLocal(const Topology& local,
                     const UsableIds& usable = std::optional<std::set<uint32_t>>()) {
        EXPECT_CALL(dev_, localTopologyImpl()).Times(1).WillOnce(Return(Result<Topology>(local)));
        EXPECT_CALL(dev_, usableGpuIdsImpl()).Times(1).WillOnce(Return(usable));
    }
    settings::Settings settings_;
    StrictMock<MockDevice> dev_{&settings_};
};

TEST_F(DeviceMapping,
       GivenTheSameMachineShape_WhenPlanned_ThenEverySourceGpuGetsADistinctDestination) {
    Topology src = machine(2, 0x1000, "amdgpu-kfd-1.img");
    Topology local = machine(2, 0x5000, "/sys/class/kfd");
    expectLocal(local);

    auto r = dev_.planGpuMapping(src);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->size(), 2u);
    std::set<uint32_t> dsts;
    for (const auto& [s, d] : *r) {
        EXPECT_NE(src.findGpu(s), nullptr);
        EXPECT_NE(local.findGpu(d), nullptr);
        dsts.insert(d);
    }
    EXPECT_EQ(dsts.size(), 2u);
}

TEST_F(DeviceMapping,
       GivenAPlannedMapping_WhenPlannedAgain_ThenTheSameAnswerWithoutAskingTheBackend) {
    Topology src = machine(2, 0x1000, "amdgpu-kfd-1.img");
    expectLocal(machine(2, 0x5000, "/sys/class/kfd"));
    auto first = dev_.planGpuMapping(src);
    ASSERT_TRUE(first.ok());

    auto second = dev_.planGpuMapping(src);

    ASSERT_TRUE(second.ok());
    EXPECT_EQ(*first, *second);
}

TEST_F(DeviceMapping, GivenTheBackendCanUseOnlyOneGpu_WhenPlanned_ThenThatGpuIsTheDestination) {
    Topology src = machine(1, 0x1000, "amdgpu-kfd-1.img");
    Topology local = machine(4, 0x5000, "/sys/class/kfd");
    uint32_t only = local.gpus()[2]->gpuId;
    expectLocal(local, std::optional<std::set<uint32_t>>(std::set<uint32_t>{only}));

    auto r = dev_.planGpuMapping(src);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ(r->begin()->second, only);
}

TEST_F(DeviceMapping, GivenMoreSourceGpusThanLocal_WhenPlanned_ThenNoMappingNamingBothTopologies) {
    expectLocal(machine(1, 0x5000, "/sys/class/kfd"));

    auto r = dev_.planGpuMapping(machine(2, 0x1000, "amdgpu-kfd-1.img"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NoMapping);
    EXPECT_THAT(r.error().describe(),
                HasSubstr("while mapping the checkpointed GPUs (amdgpu-kfd-1.img) onto this "
                          "machine (/sys/class/kfd)"));
}

TEST_F(DeviceMapping, GivenForceSingleGpuInTheSettings_WhenPlanned_ThenTwoSourceGpusShareOne) {
    settings_.forceSingleGpuRestore = true;
    Topology local = machine(1, 0x5000, "/sys/class/kfd");
    expectLocal(local);

    auto r = dev_.planGpuMapping(machine(2, 0x1000, "amdgpu-kfd-1.img"));

    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->size(), 2u);
    for (const auto& [s, d] : *r)
        EXPECT_EQ(d, local.gpus()[0]->gpuId);
}

TEST_F(DeviceMapping, GivenADeviceMapInTheSettings_WhenPlanned_ThenItIsHonoured) {
    Topology src = machine(1, 0x1000, "amdgpu-kfd-1.img");
    Topology local = machine(4, 0x5000, "/sys/class/kfd");
    uint32_t want = local.gpus()[3]->gpuId;
    settings_.deviceMap = {settings::DeviceMapEntry{src.gpus()[0]->gpuId, want, -1}};
    expectLocal(local);

    auto r = dev_.planGpuMapping(src);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->at(src.gpus()[0]->gpuId), want);
}

TEST_F(DeviceMapping, GivenTheLocalTopologyCannotBeRead_WhenPlanned_ThenTheErrorSaysSo) {
    EXPECT_CALL(dev_, localTopologyImpl()).WillOnce(Return(Result<Topology>(injected("no sysfs"))));

    auto r = dev_.planGpuMapping(machine(1, 0x1000, "amdgpu-kfd-1.img"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while reading this machine's topology: no sysfs");
}

} // namespace
