// The dump's guardian (criu-frontend/dump_guardian.h) against a fake criu: a child of the test
// that starts a guardian, tells it what it paused, and dies by SIGKILL (or ends its dump
// normally). The guardian's release function writes what it was asked to release into a file,
// since it runs in the guardian's own process.

#include "dump_guardian.h"

#include "coordination/paused_record.h"
#include "temp_dir.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

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
    /// A release function that appends "<pid>\n" to released.txt; pid 666 fails.
    frontend::GuardianOptions options() const {
        std::string out = dir_ / "released.txt";
        frontend::GuardianOptions o;
        o.dir = dir_ / "run";
        o.backend = "fake";
        o.release = [out](int pid) -> hal::Result<hal::PausedRelease> {
            if (pid == 666)
                return hal::makeError(hal::ErrorCode::Kernel, "the fake cannot release %d", pid);
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
    std::string released() const { return testsupport::readFile(dir_ / "released.txt"); }

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
        auto end = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < end) {
            if (done())
                return true;
            std::this_thread::sleep_for(5ms);
        }
        return done();
    }

    testsupport::TempDir dir_;
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
    std::string log = testsupport::readFile(hal::guardianLogPath(dir_ / "run", criu));
    EXPECT_THAT(log, HasSubstr("criu " + std::to_string(criu) + " died in the middle of a dump"));
    EXPECT_THAT(log, HasSubstr("process 101: unpaused"));
    EXPECT_THAT(log, Not(HasSubstr("process 202")));
    EXPECT_EQ(access(hal::pausedRecordPath(dir_ / "run", criu).c_str(), F_OK), -1)
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
    EXPECT_EQ(access(hal::guardianLogPath(dir_ / "run", criu).c_str(), F_OK), -1);
    EXPECT_EQ(access(hal::pausedRecordPath(dir_ / "run", criu).c_str(), F_OK), -1);
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
        auto r = hal::readPausedRecords(run);
        return r.ok() && r->size() == 1 && r->front().paused == std::vector<int>{7, 8};
    }));
    auto records = hal::readPausedRecords(run);
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
    auto records = hal::readPausedRecords(dir_ / "run");
    ASSERT_TRUE(records.ok()) << records.error().describe();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().paused, std::vector<int>{666});
    EXPECT_THAT(testsupport::readFile(hal::guardianLogPath(dir_ / "run", criu)),
                HasSubstr("process 666 stays paused: the fake cannot release 666"));
}

TEST(PausedRecord, GivenMalformedLines_ThenTheErrorNamesFileAndLine) {
    auto r = hal::parsePausedRecord("criu 12\npaused 0x10\n", "/run/x/paused-12");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("/run/x/paused-12:2"));
    EXPECT_FALSE(hal::parsePausedRecord("paused 3\n", "f").ok()) << "no criu line";
    EXPECT_FALSE(hal::parsePausedRecord("criu 99999999999\n", "f").ok()) << "pid out of range";
    auto good = hal::parsePausedRecord("criu 12\nguardian 13\nbackend kfd\npaused 4\n", "f");
    ASSERT_TRUE(good.ok()) << good.error().describe();
    EXPECT_EQ(good->paused, std::vector<int>{4});
}

TEST(PausedRecord, ForgettingAProcessRewritesOrRemovesTheRecords) {
    testsupport::TempDir dir;
    ASSERT_TRUE(hal::writePausedRecord(dir.path(), {10, 11, "mock", {1, 2}, {}}).ok());
    ASSERT_TRUE(hal::writePausedRecord(dir.path(), {20, 21, "mock", {2}, {}}).ok());
    ASSERT_TRUE(hal::forgetPausedProcess(dir.path(), 2).ok());
    auto records = hal::readPausedRecords(dir.path());
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ(records->front().criuPid, 10);
    EXPECT_EQ(records->front().paused, std::vector<int>{1});
}

} // namespace
