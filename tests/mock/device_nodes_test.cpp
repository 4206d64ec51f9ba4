// The mock machine's device nodes and a process's view of them: a container given some of the
// node's GPUs (kfd and their render nodes in its /dev) sees and opens only those.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/device_nodes.h"
#include "mockgpu/machine.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>

namespace {

using mocktest::DeviceView;
using mocktest::errorCode;
using mocktest::errorText;
using mocktest::Fd;
using mocktest::MockMachine;
using testing::HasSubstr;

TEST(MockDeviceNodes, GivenInit_ThenDevHoldsTheMockKfdAndOneRenderNodePerGpuWithItsRealNumbers) {
    MockMachine m(3);
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(m.root()));
    std::string dev = mock::machineDevDir(m.root());
    std::vector<std::string> names = {"kfd"};
    for (unsigned g = 0; g < 3; ++g)
        names.push_back("dri/renderD" + std::to_string(mocktest::renderMinorOf(m, g)));
    for (const std::string& name : names) {
        struct stat st;
        ASSERT_EQ(0, stat((dev + "/" + name).c_str(), &st)) << name;
        EXPECT_TRUE(S_ISCHR(st.st_mode)) << name;
        if (name == "kfd")
            EXPECT_EQ(st.st_rdev, cfg.deviceRdev) << name;
        else
            EXPECT_EQ(st.st_rdev, makedev(226, static_cast<unsigned>(std::stoi(name.substr(11)))))
                << name << ": a devices cgroup must tell the GPUs apart";
    }
    size_t renderNodes = 0;
    for (const auto& e : std::filesystem::directory_iterator(dev + "/dri"))
        renderNodes += e.path().filename().string().rfind("renderD", 0) == 0;
    EXPECT_EQ(renderNodes, 3u);
    ASSERT_OK_ASSIGN(topology::Topology topo, mock::readMachineTopology(m.root()));
    EXPECT_EQ(mock::visibleGpus(topology::systemDeviceNodeCalls(), topo, dev, cfg.deviceRdev,
                                topology::AbsentNode::Report)
                  .size(),
              3u);
}

TEST(MockDeviceNodes, GivenAViewOfTheThirdGpuOnly_WhenGpuZeroIsOpened_ThenItIsTheThirdGpu) {
    MockMachine m(3);
    DeviceView pod(m, {2});
    Fd fd{-1};
    ASSERT_OK_ASSIGN(fd.fd, mock::openDevice(m.root(), 0, pod.dir()));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd.fd));
    EXPECT_EQ(s.gpuId, m.gpuId(2));
    EXPECT_EQ(s.renderMinor, mocktest::renderMinorOf(m, 2));
    EXPECT_EQ(s.devDir, pod.dir()) << "the restore needs the directory the GPU was opened through";
}

TEST(MockDeviceNodes, GivenAViewOfOneGpu_WhenASecondIsOpened_ThenTheErrorSaysWhatTheProcessSees) {
    MockMachine m(4);
    DeviceView pod(m, {1});
    auto second = mock::openDevice(m.root(), 1, pod.dir());
    EXPECT_EQ(errorCode(second), base::ErrorCode::NotFound);
    std::string why = errorText(second);
    EXPECT_THAT(why, HasSubstr("sees 1 of the 4 GPUs"));
    EXPECT_THAT(why, HasSubstr(pod.dir() + " holds kfd, dri/renderD" +
                               std::to_string(mocktest::renderMinorOf(m, 1))));
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u) << "a refused open left a context";
}

TEST(MockDeviceNodes, GivenAViewWithoutKfd_ThenNoGpuIsVisibleAndTheDescriptionSaysSo) {
    MockMachine m(2);
    DeviceView pod(m, {0, 1}, false);
    auto open = mock::openDevice(m.root(), 0, pod.dir());
    EXPECT_THAT(errorText(open), HasSubstr("sees 0 of the 2 GPUs"));
    EXPECT_THAT(errorText(open), HasSubstr("(no kfd)"));
    DeviceView empty(m, {}, false);
    EXPECT_EQ(mock::describeDeviceView(empty.dir()),
              empty.dir() + " holds no kfd and no dri/renderD* node");
}

TEST(MockDeviceNodes, GivenANodeOfOtherNumbers_ThenItIsNotAMockGpu) {
    MockMachine m(1);
    DeviceView pod(m, {});
    std::string render = "dri/renderD" + std::to_string(mocktest::renderMinorOf(m, 0));
    ASSERT_EQ(0, mknod((pod.dir() + "/" + render).c_str(), S_IFCHR | 0600, makedev(1, 3)));
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(m.root()));
    ASSERT_OK_ASSIGN(topology::Topology topo, mock::readMachineTopology(m.root()));
    std::vector<std::string> why;
    EXPECT_TRUE(mock::visibleGpus(topology::systemDeviceNodeCalls(), topo, pod.dir(),
                                  cfg.deviceRdev, topology::AbsentNode::Probe, &why)
                    .empty());
    ASSERT_EQ(why.size(), 1u);
    EXPECT_THAT(why[0], HasSubstr("is not the character device 226:"));
}

// A restored container's /dev is the old pod's: a GPU whose node it lacks is asked of the kernel
// through a probe node (no devices cgroup here: allowed), which is removed again; a workload,
// which uses what its /dev holds, does not see it.
TEST(MockDeviceNodes, GivenAViewLackingANode_ThenARestoreProbesItAndAWorkloadDoesNotSeeIt) {
    MockMachine m(3);
    DeviceView pod(m, {1});
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(m.root()));
    ASSERT_OK_ASSIGN(topology::Topology topo, mock::readMachineTopology(m.root()));
    std::vector<std::string> why;
    EXPECT_EQ(mock::visibleGpus(topology::systemDeviceNodeCalls(), topo, pod.dir(), cfg.deviceRdev,
                                topology::AbsentNode::Report, &why)
                  .size(),
              1u);
    EXPECT_EQ(why.size(), 2u);
    EXPECT_EQ(mock::visibleGpus(topology::systemDeviceNodeCalls(), topo, pod.dir(), cfg.deviceRdev,
                                topology::AbsentNode::Probe)
                  .size(),
              3u);
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(pod.dir())) {
        (void)e;
        ++entries;
    }
    EXPECT_EQ(entries, 2u) << "a probe node was left in " << pod.dir() << " (kfd and dri only)";
}

TEST(MockDeviceNodes, GivenAViewLackingANode_WhenEnsured_ThenTheNodeIsMadeWithKfdsMode) {
    MockMachine m(2);
    DeviceView pod(m, {0});
    ASSERT_EQ(0, chmod((pod.dir() + "/kfd").c_str(), 0660));
    int minor = mocktest::renderMinorOf(m, 1);
    ASSERT_OK_ASSIGN(
        bool made, topology::ensureRenderNode(topology::systemDeviceNodeCalls(), pod.dir(), minor));
    EXPECT_TRUE(made);
    struct stat st;
    ASSERT_EQ(0, stat(topology::renderNodePathIn(pod.dir(), minor).c_str(), &st));
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(226, static_cast<unsigned>(minor)));
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    ASSERT_OK_ASSIGN(bool again, topology::ensureRenderNode(topology::systemDeviceNodeCalls(),
                                                            pod.dir(), minor));
    EXPECT_FALSE(again) << "a node that is there is not made again";
}

TEST(MockDeviceNodes, GivenNoViewNamed_ThenEveryGpuOpensAsBefore) {
    MockMachine m(2);
    Fd fd{-1};
    ASSERT_OK_ASSIGN(fd.fd, mock::openDevice(m.root(), 1));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd.fd));
    EXPECT_EQ(s.gpuId, m.gpuId(1));
    EXPECT_TRUE(s.devDir.empty());
}

} // namespace
