// The fault sweep of the mock backend (issue 55): every call of a dump and of a restore into the
// mock driver (its criu ops: pause, checkpoint, read-bo, write-images, unpause, restore, import,
// write-bo, resume) fails once with each errno, through the driver's own fault injection
// (ROOT/faults, "<operation> <n> <ERRNO>"), which reaches mock.so as loaded by the registry. Each
// run must fail with an error naming the call, the GPU or file and the step, leave the contexts
// unpaused (dump) or none of the restored ones (restore), and no fd or mapping in this process.
// FAULT_SWEEP=all runs every call; CI runs a fixed sample.
#include "fault_sweep.h"
#include "mock_fault_plan.h"
#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include "formats/image_store.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace {

using faultsweep::FaultPlan;
using mocktest::MockFaultPlan;

constexpr uint32_t kFileId = 10;
constexpr uint64_t kBoSize = 96 * 1024;

/// The errnos a driver call answers: the five every call can, ENOSPC where the call writes
/// (the driver keeps its state in files), and the driver's own answers.
std::vector<int> mockErrnos(const std::string& op) {
    std::vector<int> e = faultsweep::commonErrnos();
    if (op != "checkpoint" && op != "read-bo")
        e.push_back(ENOSPC);
    if (op == "pause" || op == "checkpoint")
        e.push_back(ETIMEDOUT); // a context lock not given up within its bound
    if (op == "import")
        e.push_back(EBADF); // a memory fd that is not an export of this machine
    return e;
}

/// One mock machine of one GPU for a whole sweep, this process playing the dumped and the
/// restored process; the mock backend loaded as the plugin loads it.
class MockSweep {
public:
    MockSweep() : machine_(1), loader_(settings()) {
        std::filesystem::create_directories(imagesDir());
        store_ = std::move(formats::openDirectoryStore(imagesDir()).value());
    }

    std::string imagesDir() const { return machine_.dir() / "images"; }
    const std::string& root() const { return machine_.root(); }

    /// A device of the backend, or nullptr (a test failure) when it is not there.
    std::unique_ptr<hal::Device> newDevice() {
        if (!loader_.backend()) {
            ADD_FAILURE() << "no mock backend in " << CRIU_AMDGPU_BUILD_BACKEND_DIR;
            return nullptr;
        }
        auto dev = loader_.backend()->createDevice(hal::DeviceEnv{&settings_, nullptr, &cgroup_});
        if (!dev.ok()) {
            ADD_FAILURE() << dev.error().describe();
            return nullptr;
        }
        dev.value()->setImageStore(store_.get());
        return std::move(dev).value();
    }

    /// Opens the GPU with two filled BOs, a queue and an event: the dumped process's device.
    int openWorkingDevice() {
        int fd = mock::openDevice(root(), 0).value();
        uint32_t q = mock::createQueue(fd).value();
        uint32_t e = mock::createEvent(fd).value();
        uint32_t a = mock::allocBo(fd, kBoSize, 1, 0x100000).value();
        uint32_t b = mock::allocBo(fd, kBoSize, 2, 0x200000).value();
        EXPECT_TRUE(mock::submit(fd, q, mock::Command{mock::Command::Op::Fill, a, 0, 7}, e).ok());
        EXPECT_TRUE(mock::writeBo(fd, b, 0, mocktest::pattern(kBoSize, 3)).ok());
        return fd;
    }

    /// The faults of a run (mock_fault_plan.h).
    MockFaultPlan& faults() { return faults_; }

    /// Whether a context of the machine is paused, by its marker or its state.
    std::string pausedContexts() {
        std::string out;
        auto contexts = mock::listContexts(root());
        if (!contexts.ok())
            return "cannot list contexts: " + contexts.error().describe();
        for (const mock::Context& c : contexts.value()) {
            auto s = c.load();
            if (c.pausedMarker() || (s.ok() && s.value().paused))
                out += (out.empty() ? "" : ", ") + std::to_string(c.id());
        }
        return out;
    }

private:
    static settings::Settings settings() {
        settings::Settings s;
        s.maxBufferSize = 32 * 1024;
        return s;
    }

    mocktest::MockMachine machine_;
    settings::Settings settings_ = [this] {
        settings::Settings s = settings();
        s.mockRoot = machine_.root();
        return s;
    }();
    mocktest::DeviceCgroup cgroup_;
    mocktest::MockBackendLoader loader_{settings_};
    std::unique_ptr<formats::ImageStore> store_;
    mocktest::MockFaultPlan faults_{machine_.root()};
};

/// No context on the machine, and this process's fds and mappings as they were.
void expectNothingLeft(MockSweep& s, size_t fds, size_t maps, std::vector<std::string>& left) {
    faultsweep::expectSame(left, "contexts of the machine", 0, mocktest::contextCount(s.root()));
    faultsweep::expectSame(left, "fds of this process", fds, faultsweep::openFdsOfThisProcess());
    faultsweep::expectSame(left, "mappings of this process", maps,
                           faultsweep::mappingsOfThisProcess());
}

faultsweep::SweepRun dumpOnce(MockSweep& s, FaultPlan& plan) {
    faultsweep::SweepRun run;
    size_t fds = faultsweep::openFdsOfThisProcess(), maps = faultsweep::mappingsOfThisProcess();
    int fd = s.openWorkingDevice();
    s.faults().configure(plan);
    {
        auto dev = s.newDevice();
        if (!dev)
            return run;
        base::Result<void> r = base::success();
        auto paused = dev->pauseProcess(getpid());
        if (!paused.ok())
            r = std::move(paused).error();
        if (r.ok())
            r = dev->checkpointProcess(getpid());
        hal::FileRef file = mocktest::fileRefOf(fd, kFileId);
        if (r.ok()) {
            // criu dumps only a file the plugin claims, and fails on a device nobody claims.
            auto mine = dev->claimFile(file);
            if (!mine.ok())
                r = std::move(mine).error();
            else if (!mine.value())
                r = base::makeError(base::ErrorCode::NotFound, "criu: fd %d not claimed", fd);
        }
        if (r.ok())
            r = dev->dumpFile(file);
        base::Result<void> finished = dev->finishDump(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    s.faults().collect(plan);
    if (std::string paused = s.pausedContexts(); !paused.empty())
        run.leftBehind.push_back("contexts left paused: " + paused);
    if (!mock::closeDevice(fd).ok())
        run.leftBehind.push_back("the dumped device cannot be closed");
    expectNothingLeft(s, fds, maps, run.leftBehind);
    return run;
}

faultsweep::SweepRun restoreOnce(MockSweep& s, FaultPlan& plan) {
    faultsweep::SweepRun run;
    size_t fds = faultsweep::openFdsOfThisProcess(), maps = faultsweep::mappingsOfThisProcess();
    s.faults().configure(plan);
    int restored = -1;
    {
        auto dev = s.newDevice();
        if (!dev)
            return run;
        base::Result<void> r = base::success();
        auto fd = dev->restoreFile(kFileId);
        if (fd.ok())
            restored = fd.value();
        else
            r = std::move(fd).error();
        if (r.ok()) {
            auto resumed = dev->resumeProcess(getpid());
            if (!resumed.ok())
                r = std::move(resumed).error();
        }
        base::Result<void> finished = dev->finishRestore(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    s.faults().collect(plan);
    if (!run.result.ok()) {
        // criu kills the restored task: what the driver holds for it must be gone already.
        faultsweep::expectSame(run.leftBehind, "contexts of the failed restore", 0,
                               mocktest::contextCount(s.root()));
        auto used = mock::gpuMemoryInUse(s.root(), 0x1000);
        faultsweep::expectSame(run.leftBehind, "GPU memory of the failed restore", 0,
                               used.ok() ? used.value() : 1);
        if (restored >= 0)
            close(restored);
    } else if (restored >= 0 && !mock::closeDevice(restored).ok()) {
        run.leftBehind.push_back("the restored device cannot be closed");
    }
    expectNothingLeft(s, fds, maps, run.leftBehind);
    return run;
}

faultsweep::SweepSpec mockSpec(const std::string& title) {
    faultsweep::SweepSpec spec;
    spec.title = title;
    spec.errnosFor = mockErrnos;
    spec.gpuOrFile = {"GPU 0x", "mock context", "file id", "renderD", ".img"};
    spec.stride = 1; // a few calls, each run cheap: CI runs them all
    return spec;
}

} // namespace

TEST(MockFaultSweep, GivenEachDriverCallOfADumpFailingOnce_ThenTheErrorNamesItAndNothingIsPaused) {
    MockSweep s;
    faultsweep::SweepSpec spec = mockSpec("mock dump");
    spec.run = [&](FaultPlan& plan) { return dumpOnce(s, plan); };
    spec.steps = {"paus", "checkpoint", "collect", "writing images", "unpaus"};
    EXPECT_GT(faultsweep::runSweep(spec).runs, 0u);
}

TEST(MockFaultSweep, GivenEachDriverCallOfARestoreFailingOnce_ThenNothingOfItIsLeft) {
    MockSweep s;
    {
        FaultPlan none;
        faultsweep::SweepRun dumped = dumpOnce(s, none);
        ASSERT_TRUE(dumped.result.ok()) << dumped.result.error().describe();
    }
    faultsweep::SweepSpec spec = mockSpec("mock restore");
    MockSweep* sweep = &s;
    spec.run = [sweep](FaultPlan& plan) { return restoreOnce(*sweep, plan); };
    spec.steps = {"restor", "resum"};
    EXPECT_GT(faultsweep::runSweep(spec).runs, 0u);
}
