#include "unstoppable_task.h"

#include "wait_until.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace testsupport {
namespace {

/// The vfork child: reports its pid through the pipe fd `arg` points at and waits to be killed.
/// It runs on the parent's memory, so it makes raw system calls only (no library state touched).
int vforkChild(void* arg) {
    int fd = *static_cast<int*>(arg);
    int me = static_cast<int>(syscall(SYS_getpid));
    if (syscall(SYS_write, fd, &me, sizeof(me)) != static_cast<long>(sizeof(me)))
        syscall(SYS_exit, 1);
    for (;;)
        syscall(SYS_pause);
}

bool writeText(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

std::string readText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace

std::string cgroupV1Freezer() {
    std::ifstream mounts("/proc/self/mounts");
    std::string dev, dir, type, options;
    while (mounts >> dev >> dir >> type >> options) {
        std::string rest;
        std::getline(mounts, rest);
        if (type == "cgroup" && ("," + options + ",").find(",freezer,") != std::string::npos)
            return dir;
    }
    return "";
}

UnstoppableTask::UnstoppableTask(Kind kind) : kind_(kind) {
    int fds[2];
    if (pipe(fds) != 0) {
        error_ = std::string("pipe: ") + strerror(errno);
        return;
    }
    pid_ = fork();
    if (pid_ == 0) {
        close(fds[0]);
        if (kind == Kind::VforkParent) {
            // vfork as the kernel makes it (CLONE_VM | CLONE_VFORK), through clone with a stack
            // of the child's own: ThreadSanitizer turns vfork() into fork(), whose parent never
            // waits (the test then saw it a zombie, not in D).
            static char stack[64 * 1024];
            int fd = fds[1];
            clone(vforkChild, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &fd);
            _exit(0); // the child let go: the test is over
        }
        char ready = 'r';
        if (write(fds[1], &ready, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    if (pid_ < 0) {
        error_ = std::string("fork: ") + strerror(errno);
        close(fds[0]);
        return;
    }
    if (kind == Kind::VforkParent) {
        if (read(fds[0], &vforkChild_, sizeof(vforkChild_)) != sizeof(vforkChild_))
            error_ = "the vfork child did not start";
        close(fds[0]);
        if (ok() && !within(std::chrono::milliseconds(5000), [&] { return state() == 'D'; }))
            error_ = std::string("the vfork parent is in state ") + state() + ", not D";
        return;
    }
    char ready;
    bool started = read(fds[0], &ready, 1) == 1;
    close(fds[0]);
    std::string freezer = cgroupV1Freezer();
    if (!started || freezer.empty()) {
        error_ = started ? "this machine has no cgroup v1 freezer" : "the task did not start";
        return;
    }
    cgroup_ = freezer + "/unstoppable-" + std::to_string(pid_);
    if (mkdir(cgroup_.c_str(), 0755) != 0 ||
        !writeText(cgroup_ + "/cgroup.procs", std::to_string(pid_)) ||
        !writeText(cgroup_ + "/freezer.state", "FROZEN")) {
        error_ = "cannot freeze in " + cgroup_ + ": " + strerror(errno);
        return;
    }
    if (!within(std::chrono::milliseconds(5000),
                [&] { return readText(cgroup_ + "/freezer.state") == "FROZEN\n"; }))
        error_ = cgroup_ + " did not freeze";
}

char UnstoppableTask::state() const {
    std::string stat = readText("/proc/" + std::to_string(pid_) + "/stat");
    size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

void UnstoppableTask::letGo() {
    if (!cgroup_.empty())
        writeText(cgroup_ + "/freezer.state", "THAWED");
    if (vforkChild_ > 0) {
        kill(vforkChild_, SIGKILL);
        vforkChild_ = -1;
    }
}

UnstoppableTask::~UnstoppableTask() {
    letGo();
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (!cgroup_.empty()) {
        for (int i = 0; i < 100 && rmdir(cgroup_.c_str()) != 0 && errno == EBUSY; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

} // namespace testsupport
