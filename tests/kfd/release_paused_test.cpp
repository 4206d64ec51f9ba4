// The guardian's path on KFD (hal::Device::releasePaused): a fresh KfdDevice, in a process that is
// not criu, unpauses a process that a dead criu left paused. On the fake kernel with the kernel's
// rules: kfd_ioctl serves CRIU ops only to the process itself or its ptrace parent (so the
// release seizes the process for the call and lets it go after), criu_unpause answers EINVAL for
// a process whose queues are not paused, and a process that exited has no KFD file to reach.

#include "kfd_test_machine.h"

#include "coordination/process_pin.h"
#include "formats/image_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace fakekfd;

class KfdReleasePaused : public ::testing::Test {
protected:
    KfdReleasePaused() : m_(machineSpec(2)) {
        ProcessSpec spec;
        spec.bos = {{0, 8192, kVram}, {1, 4096, kGtt}};
        m_.kernel->addProcess(kPid, spec);
        store_ = formats::openDirectoryStore(m_.dir.path()).value();
    }

    /// criu pauses kPid (PAUSE_DEVICES, CHECKPOINT_DEVICES) and dies: the kernel detaches it.
    void pauseAndKillCriu() {
        m_.kernel->seize(kPid);
        criu_ = m_.device(store_.get());
        auto paused = criu_->pauseProcess(kPid);
        ASSERT_TRUE(paused.ok() && *paused) << (paused.ok() ? "" : paused.error().describe());
        ASSERT_TRUE(criu_->checkpointProcess(kPid).ok());
        ASSERT_TRUE(m_.kernel->process(kPid)->paused);
        m_.kernel->release(kPid);
    }

    static constexpr int kPid = 4100;
    TestMachine m_;
    std::unique_ptr<formats::ImageStore> store_;
    std::unique_ptr<kfd::KfdDevice> criu_; ///< criu's device (its state dies with criu)
};

TEST_F(KfdReleasePaused, GivenCriuDiedWithTheProcessPaused_ThenAFreshDeviceUnpausesIt) {
    pauseAndKillCriu();
    size_t fdsBefore = m_.kernel->openFdCount();
    auto guardian = m_.device(nullptr); // a fresh process: nothing of the dump's state
    auto r = guardian->releasePaused(kPid);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::Unpaused);
    EXPECT_FALSE(m_.kernel->process(kPid)->paused);
    EXPECT_EQ(m_.kernel->process(kPid)->evictions, 0) << "queues restored once";
    EXPECT_FALSE(m_.kernel->traced(kPid)) << "the process is let go after the call";
    EXPECT_EQ(m_.kernel->openFdCount(), fdsBefore) << "the copy of its KFD file is closed";
}

TEST_F(KfdReleasePaused, GivenItsPinSaysItExited_ThenItIsGoneAndNothingIsAskedOfItsPid) {
    pauseAndKillCriu();
    // A pidfd whose process is gone (a reaped child): the pid now names some other process.
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int pin = coordination::openProcessPin(child);
    ASSERT_GE(pin, 0);
    waitpid(child, nullptr, 0);
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid, pin);
    close(pin);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::Gone);
    EXPECT_TRUE(m_.kernel->process(kPid)->paused) << "nothing unpaused";
    EXPECT_FALSE(m_.kernel->traced(kPid)) << "nothing attached";
}

TEST_F(KfdReleasePaused, GivenItsPinSaysItLives_ThenItIsUnpaused) {
    pauseAndKillCriu();
    int pin = coordination::openProcessPin(getpid()); // a live process stands for the fake one
    ASSERT_GE(pin, 0);
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid, pin);
    close(pin);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::Unpaused);
    EXPECT_FALSE(m_.kernel->traced(kPid));
}

TEST_F(KfdReleasePaused, GivenTheProcessIsNotPaused_ThenTheKernelsEinvalMeansNothingToDo) {
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::NotPaused);
    EXPECT_FALSE(m_.kernel->traced(kPid));
}

TEST_F(KfdReleasePaused, GivenTheProcessExited_ThenItIsGone) {
    pauseAndKillCriu();
    m_.kernel->exitTask(kPid);
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::Gone);
}

TEST_F(KfdReleasePaused, GivenAProcessWithoutKfd_ThenThereIsNoGpuWork) {
    m_.kernel->addPlainTask(4200, {"/dev/null"});
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(4200);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(*r, hal::PausedRelease::NoGpu);
}

TEST_F(KfdReleasePaused, GivenCriuStillTracesIt_ThenTheReleaseFailsNamingPtraceAndChangesNothing) {
    m_.kernel->seize(kPid);
    criu_ = m_.device(store_.get());
    ASSERT_TRUE(criu_->pauseProcess(kPid).ok());
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("PTRACE_SEIZE"), std::string::npos) << r.error().describe();
    EXPECT_NE(r.error().describe().find("process 4100"), std::string::npos);
    EXPECT_TRUE(m_.kernel->process(kPid)->paused);
    EXPECT_TRUE(m_.kernel->traced(kPid)) << "criu's trace is untouched";
}

TEST_F(KfdReleasePaused, GivenUnpauseFails_ThenTheErrorSaysSoAndTheProcessIsLetGo) {
    pauseAndKillCriu();
    m_.kernel->failCall("ioctl:UNPAUSE", EIO);
    auto guardian = m_.device(nullptr);
    auto r = guardian->releasePaused(kPid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("UNPAUSE"), std::string::npos) << r.error().describe();
    EXPECT_FALSE(m_.kernel->traced(kPid));
    EXPECT_TRUE(m_.kernel->process(kPid)->paused);
}

} // namespace
