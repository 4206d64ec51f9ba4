// The real kernel interface, on what a machine without a GPU has: these are real system calls.
#include "kfd/kfd_uapi.h"
#include "kfd/real_kernel.h"
#include "unstoppable_task.h"
#include "wait_until.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>

TEST(KfdRealKernel, GivenOrdinaryFiles_ThenFileCallsBehaveAsTheKernelDoes) {
    auto k = kfd::makeRealKernel();
    EXPECT_EQ(k->open("/nonexistent/kfd", O_RDWR), -ENOENT);
    int fd = k->open("/dev/null", O_RDWR);
    ASSERT_GE(fd, 0);
    kfd_ioctl_get_version_args v = {};
    EXPECT_EQ(k->ioctl(fd, AMDKFD_IOC_GET_VERSION, &v), -ENOTTY);
    struct stat a, b;
    EXPECT_EQ(k->fstat(fd, &a), 0);
    EXPECT_EQ(k->stat("/dev/null", &b), 0);
    EXPECT_EQ(a.st_rdev, b.st_rdev);
    EXPECT_EQ(k->stat("/nonexistent", &b), -ENOENT);
    int copy = k->dup(fd);
    ASSERT_GE(copy, 0);
    int other = k->open("/dev/null", O_RDWR);
    int same = k->sameFile(fd, copy);
    if (same != -ENOSYS && same != -EPERM) {
        EXPECT_EQ(same, 1);
        EXPECT_EQ(k->sameFile(fd, other), 0);
    }
    std::vector<int> pids;
    EXPECT_EQ(k->listPids(&pids), 0);
    EXPECT_NE(std::find(pids.begin(), pids.end(), getpid()), pids.end());
    std::vector<kfd::ProcFd> fds;
    EXPECT_EQ(k->listProcessFds(getpid(), &fds), 0);
    EXPECT_TRUE(
        std::any_of(fds.begin(), fds.end(), [&](const kfd::ProcFd& f) { return f.fd == fd; }));
    EXPECT_LT(k->listProcessFds(999999999, &fds), 0);
    int got = k->pidGetFd(getpid(), fd);
    if (got >= 0)
        EXPECT_EQ(k->close(got), 0);
    else
        EXPECT_TRUE(got == -EPERM || got == -ENOSYS) << got;
    EXPECT_LT(k->pidGetFd(999999999, fd), 0);
    sdma::Device dev{};
    EXPECT_LT(k->libdrm().deviceInitialize(fd, &dev), 0) << "/dev/null is no amdgpu device";
    EXPECT_EQ(k->close(copy), 0);
    EXPECT_EQ(k->close(other), 0);
    EXPECT_EQ(k->close(fd), 0);
    EXPECT_EQ(k->close(fd), -EBADF);
}

namespace {

/// TracerPid of /proc/<pid>/status.
int tracerOf(int pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("TracerPid:", 0) == 0)
            return atoi(line.c_str() + 10);
    return -1;
}

} // namespace

TEST(KfdRealKernel, GivenARunningProcess_ThenSeizeMakesUsItsTracerAndDetachLetsItRunOn) {
    int pipeFds[2];
    ASSERT_EQ(pipe(pipeFds), 0);
    pid_t child = fork();
    if (child == 0) {
        close(pipeFds[0]);
        for (char c = 0;; ++c) { // counts on, as a workload does
            if (write(pipeFds[1], &c, 1) != 1)
                _exit(1);
            usleep(2000);
        }
    }
    close(pipeFds[1]);
    auto k = kfd::makeRealKernel();
    int seized = k->ptraceSeize(child);
    if (seized == -EPERM) { // a sandbox without ptrace (Yama, seccomp): nothing to check here
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        GTEST_SKIP() << "ptrace is not permitted here";
    }
    ASSERT_EQ(seized, 0);
    EXPECT_EQ(tracerOf(child), getpid());
    EXPECT_EQ(k->ptraceSeize(child), -EPERM) << "a process has one tracer";
    EXPECT_EQ(k->ptraceDetach(child), 0);
    EXPECT_EQ(tracerOf(child), 0);
    char c;
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(read(pipeFds[0], &c, 1), 1) << "the process runs on after the detach";
    EXPECT_EQ(k->ptraceSeize(999999999), -ESRCH);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(pipeFds[0]);
}

namespace {

/// In a forked tracer: seizes `pid` and detaches it with a bound of 300 ms. Reports "<seize>
/// <detach> <ms>" through a pipe; the tracer then ends. Empty when it did not answer in 5 s.
std::string seizeAndDetachInATracer(int pid) {
    int fds[2];
    if (pipe(fds) != 0)
        return "";
    pid_t tracer = fork();
    if (tracer == 0) {
        close(fds[0]);
        auto k = kfd::makeRealKernel(300);
        auto start = std::chrono::steady_clock::now();
        int seized = k->ptraceSeize(pid);
        int detached = seized == 0 ? k->ptraceDetach(pid) : 0;
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
        std::string out = std::to_string(seized) + " " + std::to_string(detached) + " " +
                          std::to_string(ms) + " " + std::to_string(tracerOf(pid));
        if (write(fds[1], out.data(), out.size()) < 0)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    pollfd p{fds[0], POLLIN, 0};
    std::string out;
    if (poll(&p, 1, 5000) == 1) {
        char buf[128];
        ssize_t n = read(fds[0], buf, sizeof(buf));
        out.assign(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    }
    close(fds[0]);
    kill(tracer, SIGKILL);
    waitpid(tracer, nullptr, 0);
    return out;
}

void expectDetachBounded(testsupport::UnstoppableTask::Kind kind) {
    testsupport::UnstoppableTask task(kind);
    ASSERT_TRUE(task.ok()) << task.error();
    std::string answer = seizeAndDetachInATracer(task.pid());
    ASSERT_FALSE(answer.empty()) << "the detach did not return within 5 s";
    std::istringstream fields(answer);
    int seized = 1, detached = 1, tracer = 0;
    long ms = -1;
    fields >> seized >> detached >> ms >> tracer;
    ASSERT_EQ(seized, 0) << answer;
    EXPECT_EQ(detached, -ETIMEDOUT) << answer;
    EXPECT_GE(ms, 300) << answer;
    EXPECT_LT(ms, 2000) << answer;
    EXPECT_NE(tracer, 0) << "attached while the tracer lived: " << answer;
    EXPECT_EQ(tracerOf(task.pid()), 0) << "the tracer's end let the task go";
    task.letGo();
    EXPECT_TRUE(testsupport::within(std::chrono::milliseconds(2000),
                                    [&] { return task.state() != 'D' && task.state() != 't'; }))
        << "state " << task.state();
}

} // namespace

TEST(KfdRealKernel, GivenATaskInAFrozenCgroup_ThenDetachGivesUpWithinItsBound) {
    expectDetachBounded(testsupport::UnstoppableTask::Kind::Frozen);
}

TEST(KfdRealKernel, GivenATaskInUninterruptibleSleep_ThenDetachGivesUpWithinItsBound) {
    expectDetachBounded(testsupport::UnstoppableTask::Kind::VforkParent);
}
