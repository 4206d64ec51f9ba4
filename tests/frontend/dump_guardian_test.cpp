// The dump's guardian (criu-frontend/dump_guardian.h) against a fake criu: a child of the test
// that starts a guardian, tells it what it paused, and dies by SIGKILL (or ends its dump
// normally). The guardian's release function writes what it was asked to release into a file,
// since it runs in a worker of the guardian's. Real processes stand for the paused ones where it
// matters: one that cannot stop for ptrace (a frozen cgroup), one that exits and whose pid is
// given to another.

#include "dump_guardian.h"

#include "coordination/paused_record.h"
#include "temp_dir.h"
#include "unstoppable_task.h"
#include "wait_until.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

class DumpGuardianTest : public ::testing::Test {
protected:
    /// A release function that appends "<pid>\n" to released.txt; pid 666 fails, pid 13 never
    /// returns; with `ptraceLikeKfd_`, it first attaches and detaches the process as KFD's
    /// release did before its wait had a bound (PTRACE_SEIZE, PTRACE_INTERRUPT, waitpid).
    frontend::GuardianOptions options() const {
        std::string out = dir_ / "released.txt";
        frontend::GuardianOptions o;
        o.dir = dir_ / "run";
        o.backend = "fake";
        o.releaseWaitMs = releaseWaitMs_;
        bool ptraceLikeKfd = ptraceLikeKfd_;
        o.release = [out, ptraceLikeKfd](int pid, int) -> base::Result<hal::PausedRelease> {
            if (pid == 666)
                return base::makeError(base::ErrorCode::Kernel, "the fake cannot release %d", pid);
            while (pid == 13)
                pause();
            if (ptraceLikeKfd) {
                if (ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0 ||
                    ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr) != 0)
                    return base::makeErrnoError(base::ErrorCode::Kernel, errno, "ptrace %d", pid);
                int status = 0;
                while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
                }
                ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
            }
            std::ofstream(out, std::ios::app) << pid << "\n";
            return hal::PausedRelease::Unpaused;
        };
        return o;
    }

    /// Runs `dump` in a fake criu (a child process) that starts a guardian first and writes the
    /// guardian's pid to guardian.pid; returns the fake criu's pid once the guardian is up.
    int fakeCriu(const std::function<void(frontend::DumpGuardian&)>& dump) {
        pid_t child = fork();
        if (child == 0) {
            auto g = frontend::DumpGuardian::start(options());
            if (!g.ok())
                _exit(3);
            std::ofstream(dir_ / "guardian.pid") << (*g)->pid() << "\n";
            dump(**g);
            _exit(0);
        }
        for (int i = 0; i < 500 && guardianPid() == 0; ++i)
            std::this_thread::sleep_for(10ms);
        EXPECT_NE(guardianPid(), 0) << "the guardian did not start";
        return child;
    }

    int guardianPid() const { return atoi(testsupport::readFile(dir_ / "guardian.pid").c_str()); }
    /// What the release function was handed, one pid a line, in pid order (the guardian releases
    /// every process at once, so they come in any order).
    std::string released() const {
        std::istringstream lines(testsupport::readFile(dir_ / "released.txt"));
        std::vector<int> pids;
        for (std::string line; std::getline(lines, line);)
            pids.push_back(atoi(line.c_str()));
        std::sort(pids.begin(), pids.end());
        std::string out;
        for (int pid : pids)
            out += std::to_string(pid) + "\n";
        return out;
    }

    /// Waits for the fake criu's end.
    static void reap(int pid) {
        int status = 0;
        waitpid(pid, &status, 0);
    }

    /// Whether `pid` runs (not a zombie waiting for init).
    static bool running(int pid) {
        std::string status = testsupport::readFile("/proc/" + std::to_string(pid) + "/stat");
        size_t paren = status.rfind(')');
        return paren != std::string::npos && paren + 2 < status.size() && status[paren + 2] != 'Z';
    }

    /// Waits up to `limit` for `done`.
    static bool within(std::chrono::milliseconds limit, const std::function<bool()>& done) {
        return testsupport::within(limit, done);
    }

    std::string log(int criu) const {
        return testsupport::readFile(coordination::guardianLogPath(dir_ / "run", criu));
    }

    testsupport::TempDir dir_;
    int releaseWaitMs_ = 10000;
    bool ptraceLikeKfd_ = false;
};

TEST_F(DumpGuardianTest, GivenCriuKilled_ThenWhatItPausedAndDidNotResumeIsReleasedWithinASecond) {
    int criu = fakeCriu([](frontend::DumpGuardian& g) {
        g.expect(101);
        g.track({101, 202, 303});
        g.track({101, 303}); // 202 resumed (its checkpoint failed)
        raise(SIGKILL);
    });
    reap(criu);
    auto died = std::chrono::steady_clock::now();
    ASSERT_TRUE(within(1000ms, [&] { return released() == "101\n303\n"; }))
        << "released: " << released();
    EXPECT_LT(std::chrono::steady_clock::now() - died, 1000ms);
    EXPECT_TRUE(within(1000ms, [&] { return !running(guardianPid()); }));
    std::string log = testsupport::readFile(coordination::guardianLogPath(dir_ / "run", criu));
    EXPECT_THAT(log, HasSubstr("criu " + std::to_string(criu) + " died in the middle of a dump"));
    EXPECT_THAT(log, HasSubstr("process 101: unpaused"));
    EXPECT_THAT(log, Not(HasSubstr("process 202:"))) << "202 was resumed: nothing to release";
    EXPECT_THAT(log, Not(HasSubstr("process 202 stays")));
    EXPECT_EQ(access(coordination::pausedRecordPath(dir_ / "run", criu).c_str(), F_OK), -1)
        << "a record outlived a complete release";
}

TEST_F(DumpGuardianTest, GivenDumpEndedNormally_ThenNothingIsReleasedAndNothingLeftBehind) {
    int criu = fakeCriu([](frontend::DumpGuardian& g) {
        g.track({101, 202});
        g.dismiss();
        raise(SIGKILL); // criu killing the dumped tasks, or dying, after the end: none of ours
    });
    reap(criu);
    ASSERT_TRUE(within(2000ms, [&] { return !running(guardianPid()); }));
    EXPECT_EQ(released(), "");
    EXPECT_EQ(access(coordination::guardianLogPath(dir_ / "run", criu).c_str(), F_OK), -1);
    EXPECT_EQ(access(coordination::pausedRecordPath(dir_ / "run", criu).c_str(), F_OK), -1);
}

TEST_F(DumpGuardianTest, GivenCriuExitsWithoutDismissing_ThenTheGuardianReleasesAll) {
    // The destructor dismisses; a criu that _exits mid-dump (a crash) does not run it.
    int criu = fakeCriu([](frontend::DumpGuardian& g) { g.track({404}); });
    reap(criu);
    ASSERT_TRUE(within(1000ms, [&] { return released() == "404\n"; })) << released();
}

TEST_F(DumpGuardianTest, WhileCriuRuns_TheRecordListsThePausedAndTheGuardianHoldsNothingOfCriu) {
    int lingering = open("/dev/null", O_RDONLY); // an fd of criu's, inherited by the fork
    ASSERT_GE(lingering, 0);
    int criu = fakeCriu([](frontend::DumpGuardian& g) {
        g.track({7, 8});
        pause(); // criu at work, until killed
    });
    close(lingering);
    int guardian = guardianPid();
    std::string run = dir_ / "run";
    ASSERT_TRUE(within(1000ms, [&] {
        auto r = coordination::readPausedRecords(run);
        return r.ok() && r->size() == 1 && r->front().paused == std::vector<int>{7, 8};
    }));
    auto records = coordination::readPausedRecords(run);
    ASSERT_TRUE(records.ok()) << records.error().describe();
    EXPECT_EQ(records->front().criuPid, criu);
    EXPECT_EQ(records->front().guardianPid, guardian);
    EXPECT_EQ(records->front().backend, "fake");

    // Not criu's child, not in its session, no fd of criu's besides its socket.
    std::string stat = testsupport::readFile("/proc/" + std::to_string(guardian) + "/stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    char state;
    int ppid = 0, pgrp = 0, session = 0;
    fields >> state >> ppid >> pgrp >> session;
    EXPECT_NE(ppid, criu);
    EXPECT_NE(session, getsid(criu));
    std::string fdDir = "/proc/" + std::to_string(guardian) + "/fd/";
    for (int fd = 0; fd < 64; ++fd) {
        char target[256] = {};
        if (readlink((fdDir + std::to_string(fd)).c_str(), target, sizeof(target) - 1) < 0)
            continue;
        std::string t = target;
        bool expected = t == "/dev/null" || t.rfind("socket:", 0) == 0 ||
                        t == "anon_inode:[pidfd]" || t.find("/run/guardian-") != std::string::npos;
        EXPECT_TRUE(expected) << "the guardian holds fd " << fd << " -> " << t;
    }
    kill(criu, SIGKILL);
    reap(criu);
    ASSERT_TRUE(within(1000ms, [&] { return released() == "7\n8\n"; })) << released();
}

TEST_F(DumpGuardianTest, GivenAReleaseFails_ThenTheRecordKeepsThatProcessForTheOperator) {
    int criu = fakeCriu([](frontend::DumpGuardian& g) {
        g.track({5, 666});
        raise(SIGKILL);
    });
    reap(criu);
    ASSERT_TRUE(within(2000ms, [&] { return !running(guardianPid()); }));
    EXPECT_EQ(released(), "5\n");
    auto records = coordination::readPausedRecords(dir_ / "run");
    ASSERT_TRUE(records.ok()) << records.error().describe();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().paused, std::vector<int>{666});
    EXPECT_THAT(testsupport::readFile(coordination::guardianLogPath(dir_ / "run", criu)),
                HasSubstr("process 666 stays paused: the fake cannot release 666"));
}

TEST_F(DumpGuardianTest, GivenOneReleaseNeverReturns_ThenTheOthersAreReleasedAtOnceAndItIsNamed) {
    releaseWaitMs_ = 1500;
    int criu = fakeCriu([](frontend::DumpGuardian& g) {
        g.track({13, 14}); // 13's release never returns; 14 comes after it in pid order
        raise(SIGKILL);
    });
    reap(criu);
    auto died = std::chrono::steady_clock::now();
    ASSERT_TRUE(within(700ms, [&] { return released() == "14\n"; }))
        << "one stuck release held up the other: " << released();
    ASSERT_TRUE(within(3000ms, [&] { return !running(guardianPid()); }));
    EXPECT_LT(std::chrono::steady_clock::now() - died, 3000ms);
    EXPECT_THAT(log(criu), HasSubstr("process 13 stays paused: its release did not finish within "
                                     "1500 ms"));
    EXPECT_THAT(log(criu), HasSubstr("the step it was at: the fake backend's release of process "
                                     "13"));
    EXPECT_THAT(log(criu), HasSubstr("process 14: unpaused"));
    auto records = coordination::readPausedRecords(dir_ / "run");
    ASSERT_TRUE(records.ok()) << records.error().describe();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().paused, std::vector<int>{13});
}

namespace {

/// TracerPid of /proc/<pid>/status.
int tracerOf(int pid) {
    std::istringstream status(testsupport::readFile("/proc/" + std::to_string(pid) + "/status"));
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("TracerPid:", 0) == 0)
            return atoi(line.c_str() + 10);
    return -1;
}

/// A child that sleeps until killed.
int sleeper() {
    pid_t child = fork();
    if (child == 0)
        for (;;)
            pause();
    return child;
}

void endChild(int pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

} // namespace

TEST_F(DumpGuardianTest, GivenAPausedTaskInAFrozenCgroup_ThenTheOtherIsReleasedAndTheGuardianEnds) {
    // The cgroup v1 freezer where the machine has one (this one does), else a task in an
    // uninterruptible sleep: either way, waitpid after PTRACE_INTERRUPT would block.
    auto kind = testsupport::cgroupV1Freezer().empty()
                    ? testsupport::UnstoppableTask::Kind::VforkParent
                    : testsupport::UnstoppableTask::Kind::Frozen;
    testsupport::UnstoppableTask frozen(kind);
    ASSERT_TRUE(frozen.ok()) << frozen.error();
    int other = sleeper();
    int stuck = frozen.pid();
    ptraceLikeKfd_ = true;
    releaseWaitMs_ = 1500;
    int criu = fakeCriu([&](frontend::DumpGuardian& g) {
        g.track({stuck, other});
        raise(SIGKILL);
    });
    reap(criu);
    auto died = std::chrono::steady_clock::now();
    std::string want = std::to_string(other) + "\n";
    EXPECT_TRUE(within(1000ms, [&] { return released() == want; })) << "released: " << released();
    ASSERT_TRUE(within(3000ms, [&] { return !running(guardianPid()); }));
    EXPECT_LT(std::chrono::steady_clock::now() - died, 3000ms);
    EXPECT_THAT(log(criu), HasSubstr("process " + std::to_string(stuck) +
                                     " stays paused: its release did not finish within 1500 ms"));
    EXPECT_EQ(tracerOf(stuck), 0) << "the killed worker let go of the task it had attached";
    EXPECT_EQ(tracerOf(other), 0);
    frozen.letGo();
    endChild(other);
}

TEST_F(DumpGuardianTest, GivenAPausedProcessExitedAndItsPidWasReused_ThenTheNewcomerIsNotTouched) {
    int first = sleeper();
    int criu = fakeCriu([first](frontend::DumpGuardian& g) {
        g.expect(first); // criu takes its pidfd now
        pause();
    });
    std::string run = dir_ / "run";
    ASSERT_TRUE(within(1000ms, [&] {
        auto r = coordination::readPausedRecords(run);
        return r.ok() && r->size() == 1 && r->front().paused == std::vector<int>{first};
    }));
    endChild(first);
    // Another process given the same pid, as criu's restore asks for a pid: clone3 with set_tid.
    pid_t tid = first;
    clone_args args{};
    args.exit_signal = SIGCHLD;
    args.set_tid = reinterpret_cast<uint64_t>(&tid);
    args.set_tid_size = 1;
    long newcomer = syscall(SYS_clone3, &args, sizeof(args));
    if (newcomer == 0)
        for (;;)
            pause();
    ASSERT_EQ(newcomer, first) << "clone3 with set_tid: " << strerror(errno);
    kill(criu, SIGKILL);
    reap(criu);
    ASSERT_TRUE(within(2000ms, [&] { return !running(guardianPid()); }));
    EXPECT_EQ(released(), "") << "the newcomer was handed to the release";
    EXPECT_THAT(log(criu), HasSubstr("process " + std::to_string(first) + " exited since criu"));
    EXPECT_TRUE(running(first)) << "the newcomer runs on";
    EXPECT_EQ(tracerOf(first), 0);
    EXPECT_EQ(access(coordination::pausedRecordPath(run, criu).c_str(), F_OK), -1);
    endChild(first);
}

TEST(PausedRecord, GivenMalformedLines_ThenTheErrorNamesFileAndLine) {
    auto r = coordination::parsePausedRecord("criu 12\npaused 0x10\n", "/run/x/paused-12");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("/run/x/paused-12:2"));
    EXPECT_FALSE(coordination::parsePausedRecord("paused 3\n", "f").ok()) << "no criu line";
    EXPECT_FALSE(coordination::parsePausedRecord("criu 99999999999\n", "f").ok())
        << "pid out of range";
    auto good =
        coordination::parsePausedRecord("criu 12\nguardian 13\nbackend kfd\npaused 4\n", "f");
    ASSERT_TRUE(good.ok()) << good.error().describe();
    EXPECT_EQ(good->paused, std::vector<int>{4});
}

TEST(PausedRecord, ForgettingAProcessRewritesOrRemovesTheRecords) {
    testsupport::TempDir dir;
    ASSERT_TRUE(coordination::writePausedRecord(dir.path(), {10, 11, "mock", {1, 2}, {}}).ok());
    ASSERT_TRUE(coordination::writePausedRecord(dir.path(), {20, 21, "mock", {2}, {}}).ok());
    ASSERT_TRUE(coordination::forgetPausedProcess(dir.path(), 2).ok());
    auto records = coordination::readPausedRecords(dir.path());
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().criuPid, 10);
    EXPECT_EQ(records->front().paused, std::vector<int>{1});
}

} // namespace
