// The mock machine: init from a topology, machine.conf, reset, budget and the description.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/machine.h"

#include "topology/sysfs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using mocktest::MockMachine;
using testing::HasSubstr;

std::string writeTopology(const testsupport::TempDir& dir, unsigned gpus) {
    topology::SyntheticSpec spec;
    spec.gpus = gpus;
    std::string path = dir / "topo";
    auto written = topology::writeKfdTopology(topology::makeSyntheticTopology(spec), path);
    EXPECT_TRUE(written.ok()) << written.error().describe();
    return path;
}

TEST(MockMachine, GivenTopologyWithoutGpu_WhenInit_ThenFailsSayingItHasNoGpuNode) {
    testsupport::TempDir dir;
    std::string topo = writeTopology(dir, 0);
    auto made = mock::initMachine(dir / "machine", topo);
    EXPECT_EQ(errorCode(made), base::ErrorCode::Topology);
    EXPECT_THAT(errorText(made), HasSubstr("has no GPU node"));
    EXPECT_THAT(errorText(made), HasSubstr(topo));
    EXPECT_FALSE(std::filesystem::exists(dir / "machine/machine.conf"));
}

TEST(MockMachine, GivenMissingTopologyDir_WhenInit_ThenFailsNamingTheDir) {
    testsupport::TempDir dir;
    auto made = mock::initMachine(dir / "machine", dir / "no-such-topology");
    EXPECT_THAT(errorText(made), HasSubstr("no-such-topology"));
}

TEST(MockMachine, GivenTwoGpuTopology_WhenInit_ThenTopologyIsCopiedAndParsedBack) {
    MockMachine m(2);
    EXPECT_TRUE(std::filesystem::is_directory(m.root() + "/topology/nodes"));
    ASSERT_OK_ASSIGN(topology::Topology topo, mock::readMachineTopology(m.root()));
    ASSERT_EQ(topo.gpus().size(), 2u);
    EXPECT_EQ(topo.gpus()[0]->gpuId, m.gpuId(0));
    EXPECT_EQ(topo.gpus()[1]->gpuId, m.gpuId(1));
    EXPECT_EQ(topo.gpus()[0]->vramSize(), 1ull << 30);
}

TEST(MockMachine, GivenFreshMachine_WhenReadConfig_ThenDeviceIsACharDeviceCriuHandsToPlugins) {
    MockMachine m;
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(m.root()));
    EXPECT_NE(cfg.deviceRdev, 0u);
    EXPECT_NE(major(cfg.deviceRdev), 1u); // mem devices criu dumps itself
    EXPECT_EQ(cfg.budgetBytes, 0u);
}

TEST(MockMachine, GivenExplicitDeviceNode_WhenInit_ThenMachineUsesItsNumbers) {
    testsupport::TempDir dir;
    struct stat st;
    ASSERT_EQ(stat("/dev/cpu_dma_latency", &st), 0);
    ASSERT_OK(mock::initMachine(dir / "machine", writeTopology(dir, 1), "/dev/cpu_dma_latency"));
    ASSERT_OK_ASSIGN(mock::MachineConfig cfg, mock::readMachineConfig(dir / "machine"));
    EXPECT_EQ(cfg.deviceRdev, st.st_rdev);
}

TEST(MockMachine, GivenMemDeviceNode_WhenInit_ThenRefusedAsADeviceCriuDumpsItself) {
    testsupport::TempDir dir;
    auto made = mock::initMachine(dir / "machine", writeTopology(dir, 1), "/dev/null");
    EXPECT_EQ(errorCode(made), base::ErrorCode::InvalidArgument);
    EXPECT_THAT(errorText(made), HasSubstr("criu dumps itself"));
}

TEST(MockMachine, GivenRegularFileAsDeviceNode_WhenInit_ThenRefusedAsNotACharDevice) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "plain", "x");
    auto made = mock::initMachine(dir / "machine", writeTopology(dir, 1), dir / "plain");
    EXPECT_THAT(errorText(made), HasSubstr("is not a character device"));
}

TEST(MockMachine, GivenDirThatIsNotAMachine_WhenReadConfig_ThenSaysRunMockInit) {
    testsupport::TempDir dir;
    auto cfg = mock::readMachineConfig(dir.path());
    EXPECT_EQ(errorCode(cfg), base::ErrorCode::NotPresent);
    EXPECT_THAT(errorText(cfg), HasSubstr(dir.path() + " is not a mock GPU machine"));
    EXPECT_THAT(errorText(cfg), HasSubstr("run 'criu-amdgpu mock init"));
}

TEST(MockMachine, GivenDirThatIsNotAMachine_WhenOpenDevice_ThenSaysNotAMockMachine) {
    testsupport::TempDir dir;
    auto fd = mock::openDevice(dir.path(), 0);
    EXPECT_THAT(errorText(fd), HasSubstr("is not a mock GPU machine"));
}

TEST(MockMachine, GivenMachineConfWithLineWithoutNumber_WhenRead_ThenErrorNamesFileAndLine) {
    MockMachine m;
    testsupport::writeFile(m.root() + "/machine.conf",
                           "# comment\ndevice_major 10\ndevice_minor\nbudget_bytes 0\n");
    auto cfg = mock::readMachineConfig(m.root());
    EXPECT_EQ(errorCode(cfg), base::ErrorCode::Config);
    EXPECT_THAT(errorText(cfg), HasSubstr(m.root() + "/machine.conf:3: expected 'key number'"));
}

TEST(MockMachine, GivenMachineConfWithUnknownKey_WhenRead_ThenErrorNamesFileLineAndKey) {
    MockMachine m;
    testsupport::writeFile(m.root() + "/machine.conf",
                           "device_major 10\ndevice_minor 259\nbudget 5\n");
    auto cfg = mock::readMachineConfig(m.root());
    EXPECT_THAT(errorText(cfg), HasSubstr("machine.conf:3: unknown key 'budget'"));
}

TEST(MockMachine, GivenMachineConfWithoutDeviceMinor_WhenRead_ThenSaysBothNumbersAreNeeded) {
    MockMachine m;
    testsupport::writeFile(m.root() + "/machine.conf", "device_major 10\n");
    auto cfg = mock::readMachineConfig(m.root());
    EXPECT_THAT(errorText(cfg), HasSubstr("device_major and device_minor needed"));
}

TEST(MockMachine, GivenOpenContexts_WhenReset_ThenContextsAreGoneAndTopologyStays) {
    MockMachine m(2);
    ASSERT_OK_ASSIGN(int fd0, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int fd1, mock::openDevice(m.root(), 1));
    ASSERT_OK(mock::allocBo(fd0, 4096, 1, 0x10000));
    ASSERT_EQ(mocktest::contextCount(m.root()), 2u);

    ASSERT_OK(mock::resetMachine(m.root()));

    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
    EXPECT_TRUE(std::filesystem::is_directory(m.root() + "/state/contexts"));
    ASSERT_OK_ASSIGN(topology::Topology topo, mock::readMachineTopology(m.root()));
    EXPECT_EQ(topo.gpus().size(), 2u);
    ASSERT_OK_ASSIGN(uint64_t used, mock::gpuMemoryInUse(m.root(), m.gpuId(0)));
    EXPECT_EQ(used, 0u);
    close(fd0);
    close(fd1);
}

TEST(MockMachine, GivenDirThatIsNotAMachine_WhenReset_ThenRefusesAndRemovesNothing) {
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "state/keep", "precious");
    auto reset = mock::resetMachine(dir.path());
    EXPECT_THAT(errorText(reset), HasSubstr("not a mock GPU machine"));
    EXPECT_EQ(testsupport::readFile(dir / "state/keep"), "precious");
}

TEST(MockMachine, GivenInitializedMachine_WhenInitAgain_ThenStateIsWipedAndTopologyReplaced) {
    MockMachine m(1);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    close(fd);
    topology::SyntheticSpec spec;
    spec.gpus = 3;
    std::string topo = m.dir() / "topo3";
    ASSERT_OK(topology::writeKfdTopology(topology::makeSyntheticTopology(spec), topo));

    ASSERT_OK(mock::initMachine(m.root(), topo));

    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
    ASSERT_OK_ASSIGN(topology::Topology parsed, mock::readMachineTopology(m.root()));
    EXPECT_EQ(parsed.gpus().size(), 3u);
}

TEST(MockMachine, GivenNoBudgetOverride_WhenGpuBudget_ThenItIsTheGpusVram) {
    MockMachine m(1, 256ull << 20);
    ASSERT_OK_ASSIGN(uint64_t budget, mock::gpuBudget(m.root(), m.gpuId(0)));
    EXPECT_EQ(budget, 256ull << 20);
}

TEST(MockMachine, GivenBudgetBytesInMachineConf_WhenGpuBudget_ThenItOverridesVram) {
    MockMachine m(1, 256ull << 20);
    m.setBudget(12345 * 8);
    ASSERT_OK_ASSIGN(uint64_t budget, mock::gpuBudget(m.root(), m.gpuId(0)));
    EXPECT_EQ(budget, 12345u * 8);
}

TEST(MockMachine, GivenUnknownGpuId_WhenGpuBudget_ThenNotFoundNamingIt) {
    MockMachine m(1);
    auto budget = mock::gpuBudget(m.root(), 0xbeef);
    EXPECT_EQ(errorCode(budget), base::ErrorCode::NotFound);
    EXPECT_THAT(errorText(budget), HasSubstr("no GPU 0xbeef"));
}

TEST(MockMachine, GivenNoContexts_WhenDescribe_ThenListsGpusAndNoOpenDevices) {
    MockMachine m(2);
    ASSERT_OK_ASSIGN(std::string text, mock::describeMachine(m.root()));
    EXPECT_THAT(text, HasSubstr("mock GPU machine " + m.root()));
    EXPECT_THAT(text, HasSubstr("GPU 0x1000  node 1  renderD128"));
    EXPECT_THAT(text, HasSubstr("GPU 0x1111  node 2  renderD129"));
    EXPECT_THAT(text, HasSubstr("no open devices"));
}

TEST(MockMachine, GivenPausedContextWithBuffers_WhenDescribe_ThenShowsContextPausedBuffersQueues) {
    MockMachine m(1);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK(mock::allocBo(fd, 4096, 1, 0x200000));
    ASSERT_OK(mock::allocBo(fd, 8192, 2, 0x300000));
    ASSERT_OK(mock::createQueue(fd));
    ASSERT_OK(mock::criuPause(m.root(), mock::Context(m.root(), 1)));

    ASSERT_OK_ASSIGN(std::string text, mock::describeMachine(m.root()));

    EXPECT_THAT(text, HasSubstr("in use 12288"));
    EXPECT_THAT(text, HasSubstr(base::strFormat("context 1  GPU 0x1000 (seen as 0x1000)  pid %d  "
                                                "PAUSED  2 buffers (12288 bytes)  1 queues",
                                                mock::hostPid())));
    EXPECT_THAT(text, HasSubstr("  bo 1  size 4096  va 0x200000  flags 0x1"));
    EXPECT_THAT(text, HasSubstr("  bo 2  size 8192  va 0x300000  flags 0x2"));
    EXPECT_THAT(text, HasSubstr("  queue 1  submitted 0  completed 0"));
    close(fd);
}

TEST(MockMachine, GivenRunningContext_WhenDescribe_ThenShowsItRunning) {
    MockMachine m(1);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(std::string text, mock::describeMachine(m.root()));
    EXPECT_THAT(text, HasSubstr("running  0 buffers"));
    EXPECT_THAT(text, testing::Not(HasSubstr("PAUSED")));
    close(fd);
}

TEST(MockMachine, GivenContextWithCorruptState_WhenDescribe_ThenReportsItUnreadable) {
    MockMachine m(1);
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    testsupport::writeFile(m.root() + "/state/contexts/1/state", "garbage\n");
    ASSERT_OK_ASSIGN(std::string text, mock::describeMachine(m.root()));
    EXPECT_THAT(text, HasSubstr("context 1: unreadable"));
    EXPECT_THAT(text, HasSubstr("not a mock GPU context state"));
    close(fd);
}

} // namespace
