// The mock backend (mock.so) loaded through the HAL registry like the plugin loads it, with this
// test process playing the dumped (and then the restored) process.

#include "loopback_handoff.h"
#include "mock_fixture.h"
#include "test_keys.h"

#include "mockgpu/call_gate.h"
#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include "coordination/handoff_socket.h"
#include "coordination/process_pin.h"
#include "formats/content_keys.h"
#include "formats/image_chain.h"
#include "formats/image_names.h"
#include "formats/image_store.h"
#include "formats/packed_image.h"
#include "formats/render_node_image.h"
#include "formats/topology_codec.h"
#include "hal/registry.h"
#include "settings/settings.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

namespace {

using mocktest::DeviceView;
using mocktest::errorCode;
using mocktest::errorText;
using mocktest::fileRefOf;
using mocktest::MockBackendLoader;
using mocktest::MockMachine;
using mocktest::pattern;
using testing::HasSubstr;

constexpr uint32_t kFileId0 = 10; // criu's ids of the two device files
constexpr uint32_t kFileId1 = 11;
constexpr uint64_t kBoSize = 80 * 1024;

/// What one open device held before the dump.
struct Expected {
    mock::ContextState state;
    std::vector<std::vector<std::byte>> contents; ///< per BO, in state.bos order
};

class MockBackendTest : public testing::Test {
protected:
    MockBackendTest() : machine_(2), loader_(settingsFor(machine_.root())) {}

    static settings::Settings settingsFor(const std::string& root) {
        settings::Settings s;
        s.mockRoot = root;
        s.maxBufferSize = 32 * 1024; // smaller than a BO: contents move in several pieces
        return s;
    }

    void SetUp() override {
        ASSERT_NE(loader_.candidate(), nullptr)
            << "no mock backend in " << CRIU_AMDGPU_BUILD_BACKEND_DIR;
        ASSERT_TRUE(loader_.candidate()->loaded) << loader_.candidate()->skipReason;
        std::filesystem::create_directories(imagesDir());
        auto store = formats::openDirectoryStore(imagesDir());
        ASSERT_TRUE(store.ok()) << store.error().describe();
        store_ = std::move(store).value();
    }

    void TearDown() override {
        for (int fd : fds_)
            close(fd);
    }

    std::string imagesDir() const { return machine_.dir() / "images"; }

    std::unique_ptr<hal::Device> newDevice() {
        auto dev = loader_.backend()->createDevice(hal::DeviceEnv{&settings_, nullptr, &cgroup_});
        EXPECT_TRUE(dev.ok()) << dev.error().describe();
        if (!dev.ok())
            return nullptr;
        dev.value()->setImageStore(store_.get());
        return std::move(dev).value();
    }

    /// Opens GPU `gpu` with two filled BOs (one written by hand), a queue and an event used by
    /// three submits; records what the context holds.
    void openWorkingDevice(unsigned gpu, uint8_t seed, int* fdOut, Expected* expected,
                           const std::string& devDir = "") {
        ASSERT_OK_ASSIGN(int fd, mock::openDevice(machine_.root(), gpu, devDir));
        fds_.push_back(fd);
        ASSERT_OK_ASSIGN(uint32_t q, mock::createQueue(fd));
        ASSERT_OK_ASSIGN(uint32_t e, mock::createEvent(fd));
        ASSERT_OK_ASSIGN(uint32_t a, mock::allocBo(fd, kBoSize, 1, 0x100000));
        ASSERT_OK_ASSIGN(uint32_t b, mock::allocBo(fd, kBoSize, 2, 0x200000));
        ASSERT_OK(mock::submit(fd, q, mock::Command{mock::Command::Op::Fill, a, 0, seed}, e));
        ASSERT_OK(mock::writeBo(fd, b, 0, pattern(kBoSize, seed)));
        ASSERT_OK(mock::submit(fd, q, mock::Command{mock::Command::Op::Mix, a, b, 1}, e));
        ASSERT_OK_ASSIGN(expected->state, mock::queryContext(fd));
        for (const mock::BufferObject& bo : expected->state.bos) {
            std::vector<std::byte> bytes(bo.size);
            ASSERT_OK(mock::readBo(fd, bo.handle, 0, bytes));
            expected->contents.push_back(std::move(bytes));
        }
        *fdOut = fd;
    }

    /// Opens a working device on each of the two GPUs.
    void openBothGpus(int* fd0, Expected* e0, int* fd1, Expected* e1) {
        ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, fd0, e0));
        ASSERT_NO_FATAL_FAILURE(openWorkingDevice(1, 2, fd1, e1));
    }

    /// Dumps this process holding two devices (one per GPU); leaves the images in imagesDir().
    void dumpTwoDevices(Expected* e0, Expected* e1) {
        int fd0 = -1, fd1 = -1;
        ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd0, e0));
        ASSERT_NO_FATAL_FAILURE(openWorkingDevice(1, 2, &fd1, e1));
        auto dev = newDevice();
        ASSERT_NE(dev, nullptr);
        ASSERT_OK_ASSIGN(bool paused, dev->pauseProcess(getpid()));
        ASSERT_TRUE(paused);
        ASSERT_OK(dev->checkpointProcess(getpid()));
        ASSERT_OK(dev->dumpFile(fileRefOf(fd0, kFileId0)));
        ASSERT_OK(dev->dumpFile(fileRefOf(fd1, kFileId1)));
        ASSERT_OK(dev->finishDump(true));
    }

    /// Dumps this process holding the one device `fd` (criu's file id `id`).
    void dumpOneDevice(int fd, uint32_t id = kFileId0) {
        auto dev = newDevice();
        ASSERT_NE(dev, nullptr);
        ASSERT_OK(dev->pauseProcess(getpid()));
        ASSERT_OK(dev->checkpointProcess(getpid()));
        ASSERT_OK(dev->dumpFile(fileRefOf(fd, id)));
        ASSERT_OK(dev->finishDump(true));
    }
    /// Closes every device of this process and reboots the mock machine.
    void resetMachine() {
        for (int fd : fds_)
            close(fd);
        fds_.clear();
        ASSERT_OK(mock::resetMachine(machine_.root()));
    }

    MockMachine machine_;
    settings::Settings settings_ = settingsFor(machine_.root());
    mocktest::DeviceCgroup cgroup_; ///< the restoring process's devices cgroup
    MockBackendLoader loader_;
    std::unique_ptr<formats::ImageStore> store_;
    std::vector<int> fds_;
};

// Issue 34, item 5: the simulated machine steers what the plugin does as root, so a mock root
// others may write is not a machine the backend drives, whoever named it (the tool's --root too).
TEST(MockBackendRoot, GivenAMockRootOthersMayWrite_WhenProbed_ThenNotPresentSayingWhy) {
    MockMachine machine(1);
    ASSERT_EQ(chmod(machine.root().c_str(), 0777), 0);
    settings::Settings settings;
    settings.mockRoot = machine.root();
    MockBackendLoader loader(settings);
    ASSERT_NE(loader.candidate(), nullptr);
    EXPECT_FALSE(loader.candidate()->probe.present);
    EXPECT_THAT(
        loader.candidate()->probe.reason,
        HasSubstr("mock-root '" + machine.root() + "' is writable by group or others (mode 0777)"));
}

TEST_F(MockBackendTest, GivenOpenDevices_WhenPauseProcess_ThenTrueAndEveryContextIsPaused) {
    Expected e0, e1;
    int fd0 = -1, fd1 = -1;
    ASSERT_NO_FATAL_FAILURE(openBothGpus(&fd0, &e0, &fd1, &e1));
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool paused, dev->pauseProcess(getpid()));
    EXPECT_TRUE(paused);
    EXPECT_TRUE(mock::Context(machine_.root(), 1).pausedMarker());
    EXPECT_TRUE(mock::Context(machine_.root(), 2).pausedMarker());
    ASSERT_OK(dev->finishDump(false));
}

TEST_F(MockBackendTest, GivenCriuDiedWithThisProcessPaused_WhenReleasePaused_ThenItRunsAgain) {
    Expected e0, e1;
    int fd0 = -1, fd1 = -1;
    ASSERT_NO_FATAL_FAILURE(openBothGpus(&fd0, &e0, &fd1, &e1));
    // A criu (a child) pauses this process and dies: no hook, no destructor runs.
    int self = getpid();
    pid_t criu = fork();
    if (criu == 0) {
        auto dev = newDevice();
        auto paused = dev ? dev->pauseProcess(self) : base::Result<bool>(false);
        _exit(paused.ok() && *paused ? 0 : 1);
    }
    int deadPin = coordination::openProcessPin(criu); // a pin whose process is gone once reaped
    int status = 0;
    ASSERT_EQ(waitpid(criu, &status, 0), criu);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fake criu could not pause";
    ASSERT_OK_ASSIGN(mock::TaskKey key, mock::taskKeyOf(self));
    ASSERT_TRUE(mock::Context(machine_.root(), 1).pausedMarker());
    ASSERT_TRUE(mock::callsHeld(machine_.root(), key)) << "the dead criu's gate stays closed";

    auto guardian = newDevice(); // no state of the dump
    // A pin saying the paused process exited: whoever holds the pid now is not touched.
    ASSERT_GE(deadPin, 0);
    ASSERT_OK_ASSIGN(hal::PausedRelease released, guardian->releasePaused(self, deadPin));
    EXPECT_EQ(released, hal::PausedRelease::Gone);
    EXPECT_TRUE(mock::Context(machine_.root(), 1).pausedMarker());
    EXPECT_TRUE(mock::callsHeld(machine_.root(), key));
    close(deadPin);

    int pin = coordination::openProcessPin(self);
    ASSERT_GE(pin, 0);
    ASSERT_OK_ASSIGN(released, guardian->releasePaused(self, pin));
    close(pin);
    EXPECT_EQ(released, hal::PausedRelease::Unpaused);
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
    EXPECT_FALSE(mock::Context(machine_.root(), 2).pausedMarker());
    EXPECT_FALSE(mock::callsHeld(machine_.root(), key));
    ASSERT_OK(
        mock::submit(fd0, e0.state.queues.front().id,
                     mock::Command{mock::Command::Op::Fill, e0.state.bos.front().handle, 0, 3},
                     e0.state.events.front().id)); // its driver calls pass again

    ASSERT_OK_ASSIGN(released, guardian->releasePaused(self));
    EXPECT_EQ(released, hal::PausedRelease::NotPaused) << "a second release finds nothing";
    ASSERT_OK_ASSIGN(released, guardian->releasePaused(criu));
    EXPECT_EQ(released, hal::PausedRelease::Gone);
}

TEST_F(MockBackendTest, GivenNoOpenDevice_WhenPauseProcess_ThenFalse) {
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool paused, dev->pauseProcess(getpid()));
    EXPECT_FALSE(paused);
}

TEST_F(MockBackendTest, GivenMockDeviceFdAndOtherFd_WhenClaimFile_ThenOnlyTheMockOneIsClaimed) {
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool mine, dev->claimFile(fileRefOf(fd, 1)));
    EXPECT_TRUE(mine);
    int other = open("/dev/cpu_dma_latency", O_RDONLY); // same numbers, outside the machine
    ASSERT_GE(other, 0);
    fds_.push_back(other);
    ASSERT_OK_ASSIGN(bool notMine, dev->claimFile(fileRefOf(other, 2)));
    EXPECT_FALSE(notMine);
}

TEST_F(MockBackendTest,
       GivenCheckpointedProcess_WhenDumpFile_ThenRenderTopologyAndPagesImagesAreWritten) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    for (const std::string name :
         {"amdgpu-renderD-10.img", "amdgpu-renderD-11.img", "amdgpu-topology.img",
          "amdgpu-drm-pages-10-128-0000.img", "amdgpu-drm-pages-10-128-0001.img",
          "amdgpu-drm-pages-11-129-0000.img", "amdgpu-drm-pages-11-129-0001.img"})
        EXPECT_TRUE(std::filesystem::exists(imagesDir() + "/" + name)) << name;
    // Framed as CRIU's plugin frames every image: an 8-byte size, then the BO's bytes.
    std::string pages = testsupport::readFile(imagesDir() + "/amdgpu-drm-pages-10-128-0000.img");
    ASSERT_EQ(pages.size(), 8 + kBoSize);
    uint64_t header = 0;
    memcpy(&header, pages.data(), 8);
    EXPECT_EQ(header, kBoSize);
    ASSERT_OK_ASSIGN(formats::RenderNodeImage image,
                     formats::readRenderNodeImage(*store_, kFileId1));
    EXPECT_EQ(image.gpuId, machine_.gpuId(1));
    EXPECT_EQ(image.renderMinor, 129u);
    ASSERT_EQ(image.bos.size(), 2u);
    EXPECT_EQ(image.bos[0].size, kBoSize);
    ASSERT_TRUE(image.bos[0].checksum.has_value());
    EXPECT_EQ(image.bos[0].checksum->kind, content::DigestKind::Xxh3_64);
    EXPECT_NE(image.bos[0].preferredDomains & 0x6u, 0u) << "neither VRAM nor GTT";
    EXPECT_EQ(image.bos[0].vms.size(), 1u);
}

TEST_F(MockBackendTest, GivenDump_WhenFinishDump_ThenContextsRunAgainAndTheProcessCanSubmit) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
    EXPECT_FALSE(mock::Context(machine_.root(), 2).pausedMarker());
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fds_[0], 64, 1, 0x900000));
    EXPECT_NE(bo, 0u);
}

TEST_F(MockBackendTest, GivenDumpImages_WhenOwnsImage_ThenTrueForDumpedIdsOnly) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool owns10, dev->ownsImage(kFileId0));
    ASSERT_OK_ASSIGN(bool owns11, dev->ownsImage(kFileId1));
    ASSERT_OK_ASSIGN(bool owns99, dev->ownsImage(99));
    EXPECT_TRUE(owns10);
    EXPECT_TRUE(owns11);
    EXPECT_FALSE(owns99);
}

TEST_F(MockBackendTest, GivenDumpAndReset_WhenRestoreFile_ThenTheContextHoldsTheSameState) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();

    ASSERT_OK_ASSIGN(int fd, dev->restoreFile(kFileId1));
    fds_.push_back(fd);

    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.userGpuId, e1.state.userGpuId);
    EXPECT_EQ(s.gpuId, machine_.gpuId(1));
    EXPECT_EQ(s.ownerPid, mock::hostPid());
    ASSERT_EQ(s.bos.size(), e1.state.bos.size());
    for (size_t i = 0; i < s.bos.size(); ++i) {
        EXPECT_EQ(s.bos[i].handle, e1.state.bos[i].handle);
        EXPECT_EQ(s.bos[i].size, e1.state.bos[i].size);
        EXPECT_EQ(s.bos[i].gpuVa, e1.state.bos[i].gpuVa);
        EXPECT_EQ(s.bos[i].flags, e1.state.bos[i].flags);
    }
    ASSERT_EQ(s.queues.size(), 1u);
    EXPECT_EQ(s.queues[0].submitted, 2u);
    EXPECT_EQ(s.queues[0].completed, 2u);
    ASSERT_EQ(s.events.size(), 1u);
    EXPECT_EQ(s.events[0].signals, 2u);
    EXPECT_EQ(s.nextHandle, e1.state.nextHandle);
    ASSERT_OK(dev->finishRestore(true));
}

TEST_F(MockBackendTest,
       GivenRestoredFile_WhenResumeProcess_ThenItWasPausedUntilThenAndContentsMatch) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(int fd0, dev->restoreFile(kFileId0));
    fds_.push_back(fd0);
    ASSERT_OK_ASSIGN(int fd1, dev->restoreFile(kFileId1));
    fds_.push_back(fd1);
    ASSERT_OK_ASSIGN(mock::ContextState before, mock::queryContext(fd0));
    EXPECT_TRUE(before.paused);
    EXPECT_EQ(mocktest::contextCount(machine_.root()), 2u);

    ASSERT_OK_ASSIGN(bool resumed, dev->resumeProcess(getpid()));
    EXPECT_TRUE(resumed);
    ASSERT_OK(dev->finishRestore(true));

    for (auto [fd, expected] : {std::pair{fd0, &e0}, std::pair{fd1, &e1}}) {
        ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
        EXPECT_FALSE(s.paused);
        ASSERT_EQ(s.bos.size(), expected->contents.size());
        for (size_t i = 0; i < s.bos.size(); ++i) {
            std::vector<std::byte> bytes(s.bos[i].size);
            ASSERT_OK(mock::readBo(fd, s.bos[i].handle, 0, bytes));
            EXPECT_EQ(bytes, expected->contents[i]) << "BO " << s.bos[i].handle;
        }
    }
}

TEST_F(MockBackendTest, GivenResumedProcess_WhenResumeProcessAgain_ThenFalse) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(int fd, dev->restoreFile(kFileId0));
    fds_.push_back(fd);
    ASSERT_OK_ASSIGN(bool first, dev->resumeProcess(getpid()));
    ASSERT_OK_ASSIGN(bool second, dev->resumeProcess(getpid()));
    EXPECT_TRUE(first);
    EXPECT_FALSE(second);
}

TEST_F(MockBackendTest, GivenCorruptPagesImage_WhenRestoreFile_ThenChecksumErrorAndNoContextLeft) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    std::string pages = imagesDir() + "/amdgpu-drm-pages-10-128-0001.img";
    ASSERT_TRUE(testsupport::flipByte(pages, 8 + kBoSize / 2));
    auto dev = newDevice();

    auto fd = dev->restoreFile(kFileId0);

    EXPECT_EQ(errorCode(fd), base::ErrorCode::Image);
    EXPECT_THAT(errorText(fd),
                HasSubstr("amdgpu-drm-pages-10-128-0001.img is corrupt: its XXH3-64 checksum is"));
    EXPECT_THAT(errorText(fd), HasSubstr("while restoring file id 10"));
    ASSERT_OK(dev->finishRestore(false));
    EXPECT_EQ(mocktest::contextCount(machine_.root()), 0u);
}

TEST_F(MockBackendTest,
       GivenCheckpointFault_WhenCheckpointProcess_ThenErrorAndTheProcessIsUnpaused) {
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_OK(mock::addFault(machine_.root(), "checkpoint", "1"));
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool paused, dev->pauseProcess(getpid()));
    ASSERT_TRUE(paused);

    auto checkpointed = dev->checkpointProcess(getpid());

    EXPECT_EQ(errorCode(checkpointed), base::ErrorCode::Injected);
    EXPECT_EQ(dev->phaseOf(getpid()), hal::DumpPhase::Failed);
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

TEST_F(MockBackendTest,
       GivenPauseFaultOnTheSecondContext_WhenPauseProcess_ThenErrorAndTheFirstRunsAgain) {
    Expected e0, e1;
    int fd0 = -1, fd1 = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd0, &e0));
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(1, 2, &fd1, &e1));
    ASSERT_OK(mock::addFault(machine_.root(), "pause", "2"));
    auto dev = newDevice();

    auto paused = dev->pauseProcess(getpid());

    EXPECT_EQ(errorCode(paused), base::ErrorCode::Injected);
    EXPECT_THAT(errorText(paused), HasSubstr("while pausing GPU 0x1111 (mock context 2)"));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
    EXPECT_FALSE(mock::Context(machine_.root(), 2).pausedMarker());
}

TEST_F(MockBackendTest,
       GivenADriverCallInProgress_WhenPauseProcess_ThenItWaitsAndTheCheckpointSucceeds) {
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    auto dev = newDevice();
    auto inCall = std::make_unique<mock::GateCall>(); // a thread inside a driver call
    ASSERT_OK(inCall->enter(machine_.root(), "submit on context 1"));
    std::thread ends([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        inCall.reset();
    });

    auto start = std::chrono::steady_clock::now();
    auto paused = dev->pauseProcess(getpid());
    auto waited = std::chrono::steady_clock::now() - start;
    ends.join();

    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    EXPECT_GE(waited, std::chrono::milliseconds(250)) << "the pause did not wait for the call";
    ASSERT_OK(dev->checkpointProcess(getpid()));
    ASSERT_OK_ASSIGN(mock::TaskKey self, mock::taskKeyOf(getpid()));
    EXPECT_TRUE(mock::callsHeld(machine_.root(), self));
    ASSERT_OK(dev->finishDump(true));
    EXPECT_FALSE(mock::callsHeld(machine_.root(), self));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

TEST_F(MockBackendTest,
       GivenAChildStoppedInsideADriverCall_WhenPauseProcess_ThenErrorNamingTheCall) {
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        mock::GateCall call;
        _exit(call.enter(machine_.root(), "submit on context 1").ok() && raise(SIGSTOP) == 0 ? 0
                                                                                             : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
    ASSERT_TRUE(WIFSTOPPED(status));
    auto dev = newDevice();

    auto paused = dev->pauseProcess(getpid()); // the child is a descendant: held with it

    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    EXPECT_THAT(errorText(paused), HasSubstr("stopped by a signal inside a mock GPU driver call"));
    EXPECT_THAT(errorText(paused), HasSubstr("submit on context 1"));
    ASSERT_OK_ASSIGN(mock::TaskKey self, mock::taskKeyOf(getpid()));
    EXPECT_FALSE(mock::callsHeld(machine_.root(), self));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

// Another process sharing the context (outside the dump) keeps the context's lock: the unpause
// after the refused checkpoint must not need it.
TEST_F(MockBackendTest,
       GivenContextLockHeldElsewhere_WhenCheckpointRefused_ThenContextIsUnpausedAnyway) {
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(bool paused, dev->pauseProcess(getpid()));
    ASSERT_TRUE(paused);
    mock::ContextLock frozenInCall;
    ASSERT_OK(frozenInCall.acquire(mock::Context(machine_.root(), 1).dir(), 1000));

    auto checkpointed = dev->checkpointProcess(getpid());

    EXPECT_FALSE(checkpointed.ok());
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

TEST_F(MockBackendTest, GivenNoMockRoot_WhenProbe_ThenNotPresentNamingTheSetting) {
    hal::ProbeAnswer answer = loader_.backend()->probe(settings::Settings{});
    EXPECT_FALSE(answer.present);
    EXPECT_THAT(answer.reason, HasSubstr("CRIU_AMDGPU_MOCK_ROOT"));
}

TEST_F(MockBackendTest, GivenDirThatIsNotAMachine_WhenProbe_ThenNotPresentSayingSo) {
    testsupport::TempDir other;
    hal::ProbeAnswer answer = loader_.backend()->probe(settingsFor(other.path()));
    EXPECT_FALSE(answer.present);
    EXPECT_THAT(answer.reason, HasSubstr("is not a mock GPU machine"));
}

TEST_F(MockBackendTest, GivenMachine_WhenDiscovered_ThenPresentWithDumpAndRestore) {
    const hal::ProbeAnswer& answer = loader_.candidate()->probe;
    EXPECT_TRUE(answer.present) << answer.reason;
    EXPECT_THAT(answer.capabilities,
                testing::IsSupersetOf({hal::capability::kDump, hal::capability::kRestore,
                                       hal::capability::kSimulated}));
    EXPECT_THAT(answer.reason, HasSubstr(machine_.root()));
}

/// Parallel restore as inside criu: the restored task hands its BOs over a real socket to a
/// worker in "criu's main process" (another Device of this process), which fills them.
/// `task` restores the files; `worker` (on `main`, with a 64 KiB budget) fills them once started.
struct ParallelRig {
    std::unique_ptr<coordination::HandoffChannel> channel =
        coordination::HandoffChannel::create().value();
    std::unique_ptr<coordination::ContentHandoff> handoff;
    std::unique_ptr<hal::Device> main;
    std::unique_ptr<coordination::ParallelRestore> worker;
    std::unique_ptr<hal::Device> task;
    ParallelRig(std::unique_ptr<hal::Device> mainDevice, std::unique_ptr<hal::Device> taskDevice)
        : main(std::move(mainDevice)), task(std::move(taskDevice)) {
        int fd = channel->sendFd();
        handoff = coordination::makeSocketHandoff([fd]() -> base::Result<coordination::SendEnd> {
            return coordination::SendEnd{fd, false};
        });
        worker = testsupport::parallelRestoreOn(*main, 64 * 1024);
        task->setContentHandoff(handoff.get());
    }
};

TEST_F(MockBackendTest,
       GivenParallelRestore_WhenFilesAreRestored_ThenCriusMainProcessFillsTheBosBeforeResume) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    ParallelRig rig(newDevice(), newDevice());
    auto& task = rig.task;
    auto& worker = rig.worker;
    ASSERT_OK_ASSIGN(int fd0, task->restoreFile(kFileId0));
    fds_.push_back(fd0);
    ASSERT_OK_ASSIGN(int fd1, task->restoreFile(kFileId1));
    fds_.push_back(fd1);
    ASSERT_OK_ASSIGN(mock::ContextState s0, mock::queryContext(fd0));
    std::vector<std::byte> before(s0.bos[0].size);
    ASSERT_OK(mock::Context(machine_.root(), 1).readBo(s0.bos[0].handle, 0, before));
    EXPECT_EQ(before, std::vector<std::byte>(before.size())) << "the task filled a BO itself";

    worker->start(rig.channel->receiver());
    ASSERT_OK(worker->finish());

    EXPECT_EQ(worker->jobsRun(), 2u);
    EXPECT_LE(worker->peakStagingBytes(), 64u * 1024);
    ASSERT_OK_ASSIGN(bool resumed, task->resumeProcess(getpid()));
    EXPECT_TRUE(resumed);
    for (auto [fd, expected] : {std::pair{fd0, &e0}, std::pair{fd1, &e1}}) {
        ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
        for (size_t i = 0; i < s.bos.size(); ++i) {
            std::vector<std::byte> bytes(s.bos[i].size);
            ASSERT_OK(mock::readBo(fd, s.bos[i].handle, 0, bytes));
            EXPECT_EQ(bytes, expected->contents[i]) << "BO " << s.bos[i].handle;
        }
    }
    ASSERT_OK(task->finishRestore(true));
}

TEST_F(MockBackendTest,
       GivenAWriteFaultInTheParallelWorker_ThenItsErrorNamesGpuAndBoAndTheRestoreIsUndone) {
    Expected e0, e1;
    ASSERT_NO_FATAL_FAILURE(dumpTwoDevices(&e0, &e1));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    ParallelRig rig(newDevice(), newDevice());
    auto& task = rig.task;
    auto& worker = rig.worker;
    ASSERT_OK_ASSIGN(int fd0, task->restoreFile(kFileId0));
    fds_.push_back(fd0);
    ASSERT_OK(mock::addFault(machine_.root(), "write-bo", "2"));

    worker->start(rig.channel->receiver());
    auto finished = worker->finish();

    ASSERT_FALSE(finished.ok());
    std::string e = finished.error().describe();
    EXPECT_THAT(e, HasSubstr("injected fault in write-bo"));
    EXPECT_THAT(
        e, ::testing::ContainsRegex("bytes 0\\.\\.[0-9]+ of BO [0-9]+ \\([0-9]+ bytes\\) of GPU "
                                    "0x1000 \\(from 0x1000, mock context [0-9]+\\)"));
    EXPECT_THAT(e, HasSubstr("amdgpu-drm-pages-10-128-0001.img"));
    ASSERT_OK(mock::clearFaults(machine_.root()));
    ASSERT_OK(task->finishRestore(false)); // criu's exit, in the process the task was forked from
    EXPECT_EQ(mocktest::contextCount(machine_.root()), 0u) << "the failed restore left a context";
}

} // namespace

// A container given one GPU (kfd and one render node in its /dev) is restored in a new pod given
// the other. As under runc, the restored /dev is the old pod's (the first GPU's node, not the
// second's) and the new pod's devices cgroup gives only the second: the mapping takes it and its
// node is made.
TEST_F(MockBackendTest,
       GivenAGpuOpenedInAPod_WhenTheNewPodIsGivenTheOtherGpu_ThenItIsRestoredThere) {
    DeviceView pod(machine_, {0});
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 3, &fd, &e, pod.dir()));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    // The checkpoint records the one GPU the process used, not the node's two.
    ASSERT_OK_ASSIGN(topology::Topology recorded, formats::readTopologyImage(*store_));
    ASSERT_EQ(recorded.gpus().size(), 1u);
    EXPECT_EQ(recorded.gpus()[0]->gpuId, machine_.gpuId(0));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    cgroup_.deny(mocktest::renderMinorOf(machine_, 0));
    std::string node1 = topology::renderNodePathIn(pod.dir(), mocktest::renderMinorOf(machine_, 1));
    ASSERT_FALSE(std::filesystem::exists(node1));

    auto dev = newDevice();
    ASSERT_OK_ASSIGN(int restored, dev->restoreFile(kFileId0));
    fds_.push_back(restored);
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(restored));
    EXPECT_EQ(s.gpuId, machine_.gpuId(1));
    EXPECT_EQ(s.userGpuId, e.state.userGpuId);
    EXPECT_EQ(s.devDir, pod.dir());
    struct stat st;
    ASSERT_EQ(0, stat(node1.c_str(), &st)) << "the new pod's GPU got no node in the restored /dev";
    EXPECT_EQ(st.st_rdev, topology::renderNodeRdev(mocktest::renderMinorOf(machine_, 1)));
    ASSERT_OK(dev->finishRestore(true));
    ASSERT_OK(dev->resumeProcess(getpid()));
    for (size_t i = 0; i < e.state.bos.size(); ++i)
        EXPECT_EQ(mocktest::readAll(restored, e.state.bos[i].handle, e.contents[i].size()),
                  e.contents[i]);
}

TEST_F(MockBackendTest,
       GivenANewPodWithoutTheGpusItNeeds_WhenRestored_ThenTheErrorNamesThemAndNoGpuIsTouched) {
    DeviceView pod(machine_, {0});
    Expected e;
    int fd = -1;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 3, &fd, &e, pod.dir()));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    std::string node0 = "renderD" + std::to_string(mocktest::renderMinorOf(machine_, 0));
    std::string node1 = "renderD" + std::to_string(mocktest::renderMinorOf(machine_, 1));
    cgroup_.deny(mocktest::renderMinorOf(machine_, 0));
    cgroup_.deny(mocktest::renderMinorOf(machine_, 1));

    auto dev = newDevice();
    auto restored = dev->restoreFile(kFileId0);
    std::string why = errorText(restored);
    EXPECT_THAT(why, HasSubstr("can open none of the 2 GPUs"));
    EXPECT_THAT(why, HasSubstr(pod.dir() + " holds kfd"));
    EXPECT_THAT(why, HasSubstr("it was not given the device nodes of"));
    EXPECT_THAT(why, HasSubstr(node0));
    EXPECT_THAT(why, HasSubstr(node1));
    EXPECT_EQ(mocktest::contextCount(machine_.root()), 0u) << "a GPU was touched";
    ASSERT_OK(dev->finishRestore(false));
}

// ----------------------------------------------------------------- incremental checkpoints

namespace {

/// The bytes file `path` takes on disk.
uint64_t allocatedBytes(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return static_cast<uint64_t>(st.st_blocks) * 512;
}

class MockIncrementalTest : public MockBackendTest {
protected:
    std::string secondDir() const { return machine_.dir() / "images2"; }

    /// Dumps the device `fd` as criu's file `id` into secondDir(), against imagesDir().
    void dumpAgainstTheFirst(int fd, uint32_t id) {
        std::filesystem::create_directories(secondDir());
        auto store = formats::openDirectoryStore(secondDir());
        ASSERT_TRUE(store.ok()) << store.error().describe();
        first_ = std::move(store_);
        store_ = std::move(store).value();
        settings_.parentImages = "../images";
        ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd, id));
        settings_.parentImages.clear();
    }

    std::unique_ptr<formats::ImageStore> first_;
};

TEST_F(
    MockIncrementalTest,
    GivenOneBoRewrittenAfterAFullDump_WhenDumpedAgainstIt_ThenOnlyThatBoIsWrittenAndTheChainRestoresEveryByte) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    EXPECT_TRUE(std::filesystem::exists(imagesDir() + "/" + formats::chunkMapImageName(kFileId0)))
        << "a full dump leaves the record a later dump compares against";
    std::vector<std::byte> rewritten = pattern(kBoSize, 77);
    ASSERT_OK(mock::writeBo(fd, e.state.bos[1].handle, 0, rewritten));
    e.contents[1] = rewritten;
    ASSERT_NO_FATAL_FAILURE(dumpAgainstTheFirst(fd, kFileId1)); // criu's ids change between dumps

    EXPECT_FALSE(std::filesystem::exists(secondDir() + "/amdgpu-drm-pages-11-128-0000.img"))
        << "CRIU's own plugin must not find contents with the parent's bytes left out";
    std::string same = secondDir() + "/amdgpu-delta-drm-pages-11-128-0000.img";
    std::string changed = secondDir() + "/amdgpu-delta-drm-pages-11-128-0001.img";
    EXPECT_LE(allocatedBytes(same), 8192u) << "the unchanged BO is left out (a hole)";
    EXPECT_GE(allocatedBytes(changed), kBoSize) << "the rewritten BO is written";

    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();
    ASSERT_OK_ASSIGN(int restored, dev->restoreFile(kFileId1));
    fds_.push_back(restored);
    ASSERT_OK_ASSIGN(bool resumed, dev->resumeProcess(getpid()));
    EXPECT_TRUE(resumed);
    ASSERT_OK(dev->finishRestore(true));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(restored));
    ASSERT_EQ(s.bos.size(), e.contents.size());
    for (size_t i = 0; i < s.bos.size(); ++i)
        EXPECT_EQ(mocktest::readAll(restored, s.bos[i].handle, kBoSize), e.contents[i])
            << "BO " << i;
}

TEST_F(MockIncrementalTest,
       GivenTheParentsRecordGone_WhenTheChildIsRestored_ThenAnErrorNamingItAndNoContextMade) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    ASSERT_NO_FATAL_FAILURE(dumpAgainstTheFirst(fd, kFileId1));
    std::filesystem::remove(imagesDir() + "/" + formats::chunkMapImageName(kFileId0));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    auto dev = newDevice();

    auto restored = dev->restoreFile(kFileId1);

    EXPECT_EQ(errorCode(restored), base::ErrorCode::Image);
    EXPECT_THAT(errorText(restored), HasSubstr("images/" + formats::chunkMapImageName(kFileId0) +
                                               ": the parent image's chunk record is missing"));
    ASSERT_OK(dev->finishRestore(false));
    EXPECT_EQ(mocktest::contextCount(machine_.root()), 0u);
}

TEST_F(MockIncrementalTest,
       GivenAParentThatIsNoDirectory_WhenPaused_ThenAnErrorNamingTheOptionAndNoGpuPaused) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    settings_.parentImages = "../nowhere";
    auto dev = newDevice();

    auto paused = dev->pauseProcess(getpid());

    EXPECT_EQ(errorCode(paused), base::ErrorCode::Config);
    EXPECT_THAT(errorText(paused), HasSubstr("parent-images ../nowhere"));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

// ------------------------------------------------------------------ encrypted checkpoints

class MockEncryptedTest : public MockIncrementalTest {
protected:
    void SetUp() override {
        MockIncrementalTest::SetUp();
        settings_.contentEncryption = "aes-256-gcm";
        settings_.contentCertificate = keys_.certificate;
        settings_.contentPrivateKey = keys_.privateKey;
    }
    /// A store of `dir` that has read no key yet (the one that dumped keeps what it made).
    void freshStore(const std::string& dir) {
        auto store = formats::openDirectoryStore(dir);
        ASSERT_TRUE(store.ok()) << store.error().describe();
        store_ = std::move(store).value();
    }
    /// Restores kFileId `id` from imagesDir() or `dir`, compares every BO with `e`.
    void restoreAndCompare(uint32_t id, const Expected& e) {
        auto dev = newDevice();
        ASSERT_OK_ASSIGN(int restored, dev->restoreFile(id));
        fds_.push_back(restored);
        ASSERT_OK_ASSIGN(bool resumed, dev->resumeProcess(getpid()));
        EXPECT_TRUE(resumed);
        ASSERT_OK(dev->finishRestore(true));
        ASSERT_OK_ASSIGN(mock::ContextState st, mock::queryContext(restored));
        ASSERT_EQ(st.bos.size(), e.contents.size());
        for (size_t i = 0; i < st.bos.size(); ++i)
            EXPECT_EQ(mocktest::readAll(restored, st.bos[i].handle, kBoSize), e.contents[i])
                << "BO " << i;
    }
    /// Opens a working device (`fd`, holding `e`), dumps it into imagesDir() and resets the
    /// machine, unless `fd` is given: it then gets the device, left open for later dumps.
    void dumpWorkingDevice(Expected* e, int* fd = nullptr) {
        int opened = -1;
        ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &opened, e));
        ASSERT_NO_FATAL_FAILURE(dumpOneDevice(opened));
        if (fd)
            *fd = opened;
        else
            ASSERT_NO_FATAL_FAILURE(resetMachine());
    }
    /// Restoring `id` fails with an Image or Config error holding `why`, and leaves no context.
    void expectRefused(uint32_t id, const std::string& why) {
        auto dev = newDevice();
        auto restored = dev->restoreFile(id);
        EXPECT_THAT(errorText(restored), HasSubstr(why));
        ASSERT_OK(dev->finishRestore(false));
        EXPECT_EQ(mocktest::contextCount(machine_.root()), 0u) << "GPU memory left allocated";
    }

    testsupport::TempDir keyDir_;
    testsupport::KeyFiles keys_ = testsupport::writeTestKeys(keyDir_.path());
};

TEST_F(
    MockEncryptedTest,
    GivenEncryptionAndCompression_WhenDumpedAndRestoredWithTheKey_ThenEveryByteAndNoneInTheClear) {
    settings_.contentCompression = "zstd:1";
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    EXPECT_TRUE(std::filesystem::exists(imagesDir() + "/" + formats::kSealImageName));
    EXPECT_FALSE(std::filesystem::exists(imagesDir() + "/amdgpu-drm-pages-10-128-0001.img"))
        << "CRIU's own plugin must not find encrypted contents under its names";
    std::string packed = imagesDir() + "/amdgpu-packed-drm-pages-10-128-0001.img";
    std::string onDisk = testsupport::readFile(packed);
    std::string clear(reinterpret_cast<const char*>(e.contents[1].data()) + 4096, 64);
    EXPECT_EQ(onDisk.find(clear), std::string::npos) << "BO contents in the clear";
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(restoreAndCompare(kFileId0, e));
}

TEST_F(MockEncryptedTest,
       GivenAnEncryptedChain_WhenTheChildIsRestored_ThenEveryByteAndItsRecordsAreKeyed) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    std::vector<std::byte> rewritten = pattern(kBoSize, 77);
    ASSERT_OK(mock::writeBo(fd, e.state.bos[1].handle, 0, rewritten));
    e.contents[1] = rewritten;
    ASSERT_NO_FATAL_FAILURE(dumpAgainstTheFirst(fd, kFileId1));
    // The record holds keyed identities, not the chunks' XXH3-128.
    auto record = testsupport::readFile(secondDir() + "/" + formats::chunkMapImageName(kFileId1));
    auto map = formats::decodeChunkMap(record, "record");
    ASSERT_TRUE(map.ok()) << map.error().describe();
    const formats::BoChunks* bo = map->findFile("amdgpu-packed-delta-drm-pages-11-128-0000.img");
    ASSERT_NE(bo, nullptr);
    ASSERT_FALSE(bo->chunks.empty());
    std::span<const std::byte> first(e.contents[0].data(),
                                     std::min<size_t>(bo->chunkSize, kBoSize));
    EXPECT_NE(bo->chunks[0].sum, formats::chunkSumOf(first))
        << "a plaintext checksum in the record";
    EXPECT_EQ(bo->chunks[0].place, formats::ChunkPlace::InParent)
        << "an unchanged chunk compares with the parent's under the shared key";
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    ASSERT_NO_FATAL_FAILURE(freshStore(secondDir()));
    ASSERT_NO_FATAL_FAILURE(restoreAndCompare(kFileId1, e));
}

TEST_F(MockEncryptedTest, GivenNoPrivateKey_WhenRestored_ThenRefusedNamingTheOptionAndNoContext) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    settings_.contentPrivateKey.clear();
    ASSERT_NO_FATAL_FAILURE(expectRefused(kFileId0, "no content-private-key is given"));
}

TEST_F(MockEncryptedTest,
       GivenATamperedChunk_WhenRestored_ThenRefusedNamingFileAndFrameAndNoContext) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd));
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    std::string packed = imagesDir() + "/amdgpu-packed-drm-pages-10-128-0001.img";
    ASSERT_TRUE(testsupport::flipByte(packed, 8 + 24 + 100));
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(
        expectRefused(kFileId0, "amdgpu-packed-drm-pages-10-128-0001.img: frame 0"));
}

// ------------------------------------------- encrypted checkpoints: images bound to their place

namespace {

/// The render-node image `id` of `dir`, edited by `edit` and written back as someone without
/// the key would: its tag is left as it was.
void editRenderNodeImage(const std::string& dir, uint32_t id,
                         const std::function<void(formats::RenderNodeImage&)>& edit) {
    auto store = formats::openDirectoryStore(dir);
    ASSERT_TRUE(store.ok()) << store.error().describe();
    ASSERT_OK_ASSIGN(formats::RenderNodeImage image, formats::readRenderNodeImage(**store, id));
    edit(image);
    std::filesystem::remove(dir + "/" + formats::renderNodeImageName(id));
    ASSERT_OK(formats::writeRenderNodeImage(**store, image));
}

/// Replaces every file of directory `to` with those of `from`.
void replaceDirectory(const std::string& from, const std::string& to) {
    std::filesystem::remove_all(to);
    std::filesystem::copy(from, to);
}

} // namespace

// What the metadata says a contents file fills is authenticated (issue 52, item 2): two BOs'
// handles swapped (each BO would get the other's contents, and every checksum would still
// match), an address, a size or the GPU changed, or the keyed checksum of a file dropped: each
// is refused, naming the image whose tag does not match, before any GPU memory is made.
TEST_F(MockEncryptedTest, GivenTheMetadataEdited_WhenRestored_ThenRefusedNamingTheImageAndItsTag) {
    Expected e;
    ASSERT_NO_FATAL_FAILURE(dumpWorkingDevice(&e));
    std::string name = imagesDir() + "/" + formats::renderNodeImageName(kFileId0);
    std::string original = testsupport::readFile(name);
    const std::vector<std::pair<const char*, std::function<void(formats::RenderNodeImage&)>>> edits{
        {"handles swapped",
         [](formats::RenderNodeImage& i) { std::swap(i.bos[0].handle, i.bos[1].handle); }},
        {"an address changed",
         [](formats::RenderNodeImage& i) {
             ASSERT_FALSE(i.bos[0].vms.empty());
             i.bos[0].vms[0].addr += 0x1000;
         }},
        {"a size changed", [](formats::RenderNodeImage& i) { i.bos[1].size /= 2; }},
        {"the GPU changed", [this](formats::RenderNodeImage& i) { i.gpuId = machine_.gpuId(1); }},
        {"a checksum dropped", [](formats::RenderNodeImage& i) { i.bos[1].checksum.reset(); }},
    };
    for (const auto& [what, edit] : edits) {
        SCOPED_TRACE(what);
        ASSERT_NO_FATAL_FAILURE(editRenderNodeImage(imagesDir(), kFileId0, edit));
        ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
        ASSERT_NO_FATAL_FAILURE(
            expectRefused(kFileId0, formats::renderNodeImageName(kFileId0) +
                                        ": does not match its tag amdgpu-tag-renderD-10.img"));
        testsupport::writeFile(name, original);
    }
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(restoreAndCompare(kFileId0, e));
}

// Two same-size BOs' contents files swapped: each frame's associated data names its file, so
// the first one read is refused, naming it.
TEST_F(MockEncryptedTest, GivenTwoBosContentsSwapped_WhenRestored_ThenRefusedNamingTheFile) {
    Expected e;
    ASSERT_NO_FATAL_FAILURE(dumpWorkingDevice(&e));
    std::string first = imagesDir() + "/amdgpu-packed-drm-pages-10-128-0000.img";
    std::string second = imagesDir() + "/amdgpu-packed-drm-pages-10-128-0001.img";
    std::filesystem::rename(first, first + ".x");
    std::filesystem::rename(second, first);
    std::filesystem::rename(first + ".x", second);
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(
        expectRefused(kFileId0, "amdgpu-packed-drm-pages-10-128-0000.img: frame 0"));
}

// An encrypted checkpoint whose metadata has no tag (one made before tags, or its tag removed)
// is refused, naming the tag; content-allow-plaintext reads it (the escape for checkpoints
// without these guarantees).
TEST_F(MockEncryptedTest,
       GivenATagRemoved_WhenRestored_ThenRefusedNamingItUnlessPlaintextIsAllowed) {
    Expected e;
    ASSERT_NO_FATAL_FAILURE(dumpWorkingDevice(&e));
    ASSERT_TRUE(std::filesystem::remove(imagesDir() + "/amdgpu-tag-renderD-10.img"));
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(
        expectRefused(kFileId0, "its tag amdgpu-tag-renderD-10.img is missing"));
    settings_.contentAllowPlaintext = true;
    ASSERT_NO_FATAL_FAILURE(freshStore(imagesDir()));
    ASSERT_NO_FATAL_FAILURE(restoreAndCompare(kFileId0, e));
}

// A chain's parent replaced by another checkpoint of the same key whose record is the same
// bytes (a sibling dumped against the same parent from the same state): nothing but the id of
// the parent the child's record tag binds tells them apart, and the restore is refused naming
// the child's record and the parent.
TEST_F(MockEncryptedTest,
       GivenTheParentReplacedByAnotherCheckpointOfTheSameKey_WhenRestored_ThenRefusedNamingIt) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(dumpWorkingDevice(&e, &fd));
    std::string base = machine_.dir().path();
    auto dumpInto = [&](const std::string& dir, const std::string& parent, uint32_t id) {
        std::filesystem::create_directories(dir);
        ASSERT_NO_FATAL_FAILURE(freshStore(dir));
        settings_.parentImages = parent;
        ASSERT_NO_FATAL_FAILURE(dumpOneDevice(fd, id));
        settings_.parentImages.clear();
    };
    ASSERT_NO_FATAL_FAILURE(dumpInto(base + "/child", "../images", kFileId1));
    ASSERT_NO_FATAL_FAILURE(dumpInto(base + "/sibling", "../images", kFileId1));
    ASSERT_NO_FATAL_FAILURE(dumpInto(base + "/grandchild", "../child", 12));
    std::string record = "/" + formats::chunkMapImageName(kFileId1);
    ASSERT_EQ(testsupport::readFile(base + "/child" + record),
              testsupport::readFile(base + "/sibling" + record))
        << "the sibling's record is the child's, byte for byte";
    ASSERT_NO_FATAL_FAILURE(resetMachine());
    replaceDirectory(base + "/sibling", base + "/child");
    ASSERT_NO_FATAL_FAILURE(freshStore(base + "/grandchild"));
    ASSERT_NO_FATAL_FAILURE(expectRefused(
        12, "amdgpu-chunks-12.img: does not match its tag amdgpu-tag-chunks-12.img under the "
            "checkpoint's key: the image was changed after the dump, or comes from another "
            "checkpoint, or its parent ../child is not the checkpoint it was dumped against"));
}

TEST_F(MockEncryptedTest, GivenAnUnreadableCertificate_WhenPaused_ThenRefusedAndNothingPaused) {
    int fd = -1;
    Expected e;
    ASSERT_NO_FATAL_FAILURE(openWorkingDevice(0, 1, &fd, &e));
    settings_.contentCertificate = keyDir_ / "missing.crt";
    auto dev = newDevice();
    auto paused = dev->pauseProcess(getpid());
    EXPECT_THAT(errorText(paused), HasSubstr("content-certificate"));
    EXPECT_FALSE(mock::Context(machine_.root(), 1).pausedMarker());
}

} // namespace
