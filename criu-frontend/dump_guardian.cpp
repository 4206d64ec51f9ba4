#include "dump_guardian.h"

#include "criu_services.h"

#include "base/log.h"
#include "coordination/fd_message.h"
#include "coordination/paused_record.h"
#include "coordination/process_pin.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

namespace frontend {
namespace {

/// How long start() waits for the guardian to say it is ready.
constexpr int kReadyTimeoutMs = 5000;

int gLogFd = -1; ///< the guardian's log file (in the guardian's process)

void guardianLogSink(base::LogLevel level, const char* line) {
    if (level > base::LogLevel::Info)
        return;
    static const char* const kNames[] = {"msg", "error", "warn", "info", "debug"};
    char stamp[32] = "";
    time_t now = time(nullptr);
    struct tm tm {};
    if (localtime_r(&now, &tm))
        strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    int index = std::clamp(static_cast<int>(level), 0, 4);
    if (gLogFd >= 0)
        dprintf(gLogFd, "%s %s: %s\n", stamp, kNames[index], line);
    if (level <= base::LogLevel::Warn)
        syslog(level == base::LogLevel::Error ? LOG_ERR : LOG_WARNING, "%s", line);
}

/// Closes every fd except `keepA` and `keepB`, and points 0, 1 and 2 at /dev/null.
void closeAllBut(int keepA, int keepB) {
    int low = std::min(keepA, keepB), high = std::max(keepA, keepB);
    if (low > 3)
        close_range(3, static_cast<unsigned>(low) - 1, 0);
    if (high > low + 1)
        close_range(static_cast<unsigned>(low) + 1, static_cast<unsigned>(high) - 1, 0);
    close_range(static_cast<unsigned>(high) + 1, ~0U, 0);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd)
        if (null >= 0 && null != fd && fd != keepA && fd != keepB)
            dup2(null, fd);
    if (null > 2)
        close(null);
}

/// In the forked guardian: leaves everything of criu's behind and runs the loop. Never returns.
[[noreturn]] void becomeGuardian(int sock, int criuPidfd, int criuPid,
                                 const GuardianOptions& options) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    prctl(PR_SET_NAME, "amdgpu-guardian", 0, 0, 0);
    // Move our two fds out of the way of 0..2, then close everything else criu had open.
    if (sock < 3)
        sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
    if (criuPidfd < 3)
        criuPidfd = fcntl(criuPidfd, F_DUPFD_CLOEXEC, 3);
    closeAllBut(sock, criuPidfd);
    fcntl(sock, F_SETFL, O_NONBLOCK); // the loop drains what is there, then polls
    if (chdir("/") != 0) {
        // nothing depends on it; / always exists
    }
    umask(077);
    gLogFd = open(coordination::guardianLogPath(options.dir, criuPid).c_str(),
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    openlog("criu-amdgpu-guardian", LOG_PID, LOG_DAEMON);
    base::setLogSink(&guardianLogSink);
    base::setLogThreshold(base::LogLevel::Info);
    redirectCriuLogSink(&guardianLogSink); // the backends log through criu's sink

    std::string ready = "G " + std::to_string(getpid());
    if (::send(sock, ready.data(), ready.size(), MSG_NOSIGNAL) < 0)
        _exit(2);
    int failed = runGuardian(sock, criuPidfd, criuPid, options);
    _exit(failed ? 1 : 0);
}

/// Parses "<letter> <pid>"; the pid, or 0.
int pidOf(const char* text, size_t n) {
    if (n < 3 || n > 14 || text[1] != ' ')
        return 0;
    long v = 0;
    for (size_t i = 2; i < n; ++i) {
        if (text[i] < '0' || text[i] > '9')
            return 0;
        v = v * 10 + (text[i] - '0');
    }
    return v > 0 && v <= INT32_MAX ? static_cast<int>(v) : 0;
}

} // namespace

// ------------------------------------------------------------------------------ criu's end

base::Result<std::unique_ptr<DumpGuardian>> DumpGuardian::start(GuardianOptions options) {
    int criuPid = getpid();
    if (mkdir(options.dir.c_str(), 0700) != 0 && errno != EEXIST)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot make %s",
                                    options.dir.c_str());
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, criuPid, 0));
    if (pidfd < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, errno, "pidfd_open of criu");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        int err = errno;
        close(pidfd);
        return base::makeErrnoError(base::ErrorCode::Io, err, "socketpair for the guardian");
    }
    pid_t first = fork();
    if (first == 0) {
        // Between criu and the guardian: a session of its own, so that nothing sent to criu's
        // process group or session reaches the guardian, which init then adopts.
        close(sv[0]);
        setsid();
        pid_t guardian = fork();
        if (guardian == 0)
            becomeGuardian(sv[1], pidfd, criuPid, options);
        _exit(guardian < 0 ? 1 : 0);
    }
    int err = errno;
    close(sv[1]);
    close(pidfd);
    fcntl(sv[0], F_SETFL, O_NONBLOCK); // criu never waits on the guardian
    if (first < 0) {
        close(sv[0]);
        return base::makeErrnoError(base::ErrorCode::Kernel, err, "fork of the guardian");
    }
    int status = 0;
    while (waitpid(first, &status, 0) < 0 && errno == EINTR) {
    }
    struct pollfd p = {sv[0], POLLIN, 0};
    char buf[32];
    ssize_t n = -1;
    if (poll(&p, 1, kReadyTimeoutMs) == 1)
        n = recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT);
    int guardian = n > 0 && buf[0] == 'G' ? pidOf(buf, static_cast<size_t>(n)) : 0;
    if (!guardian) {
        close(sv[0]);
        return base::makeError(base::ErrorCode::Internal,
                               "the guardian did not start (no answer in %d ms)", kReadyTimeoutMs);
    }
    return std::unique_ptr<DumpGuardian>(
        new DumpGuardian(sv[0], guardian, coordination::guardianLogPath(options.dir, criuPid)));
}

DumpGuardian::~DumpGuardian() {
    dismiss();
}

void DumpGuardian::send(const std::string& message, int fd) {
    if (sock_ < 0)
        return;
    std::span<const int> fds(&fd, fd >= 0 ? 1 : 0);
    auto sent =
        coordination::sendFdMessage(sock_, message.data(), message.size(), fds, "to the guardian");
    if (sent.ok())
        return;
    if (!sendFailed_)
        HAL_LOG_WARN("amdgpu_plugin: the guardian (pid %d) cannot be told \"%s\": %s; if criu "
                     "dies now, `criu-amdgpu paused` finds what it left paused",
                     pid_, message.c_str(), sent.error().describe().c_str());
    sendFailed_ = true;
}

void DumpGuardian::expect(int pid) {
    if (!told_.insert(pid).second)
        return;
    int pin = coordination::openProcessPin(pid);
    if (pin < 0)
        HAL_LOG_WARN("amdgpu_plugin: no pidfd of process %d for the guardian (pidfd_open: %s): "
                     "it will go by the pid alone",
                     pid, strerror(-pin));
    send("P " + std::to_string(pid), pin);
    if (pin >= 0)
        close(pin);
}

void DumpGuardian::track(const std::vector<int>& paused) {
    for (int pid : paused)
        expect(pid);
    for (auto it = told_.begin(); it != told_.end();) {
        if (std::find(paused.begin(), paused.end(), *it) != paused.end()) {
            ++it;
            continue;
        }
        send("R " + std::to_string(*it));
        it = told_.erase(it);
    }
}

void DumpGuardian::dismiss() {
    if (sock_ < 0)
        return;
    send("D");
    close(sock_);
    sock_ = -1;
    told_.clear();
}

// ---------------------------------------------------------------------------- the guardian

int runGuardian(int sock, int criuPidfd, int criuPid, const GuardianOptions& options) {
    coordination::PausedRecord record{criuPid, getpid(), options.backend, {}, {}};
    std::map<int, int> paused; // pid -> the pidfd criu took when it paused it (or -1)
    auto save = [&] {
        record.paused.clear();
        for (const auto& entry : paused)
            record.paused.push_back(entry.first);
        if (record.paused.empty()) {
            unlink(coordination::pausedRecordPath(options.dir, criuPid).c_str());
            return;
        }
        auto r = coordination::writePausedRecord(options.dir, record);
        if (!r.ok())
            HAL_LOG_WARN("guardian: %s", r.error().describe().c_str());
    };
    auto forget = [&](std::map<int, int>::iterator it) {
        if (it->second >= 0)
            close(it->second);
        return paused.erase(it);
    };
    HAL_LOG_INFO("guardian %d watches the dump of criu %d (%s backend)", getpid(), criuPid,
                 options.backend.c_str());

    bool dismissed = false, socketClosed = false, criuEnded = false;
    // One message: "D", "P <pid>" with its pidfd, "R <pid>".
    auto take = [&](const coordination::FdMessage& m) {
        const char* text = m.bytes.data();
        size_t n = m.bytes.size();
        int pid = pidOf(text, n);
        int pin = m.fds.empty() ? -1 : m.fds.front();
        for (size_t i = 1; i < m.fds.size(); ++i)
            close(m.fds[i]);
        if (n == 1 && text[0] == 'D') {
            dismissed = true;
        } else if (text[0] == 'P' && pid && !paused.count(pid)) {
            if (pin < 0) {
                // No pidfd came (criu could not take one): the best pin left is one taken now.
                pin = coordination::openProcessPin(pid);
                HAL_LOG_WARN("guardian: process %d came without a pidfd; %s", pid,
                             pin >= 0 ? "took one on receipt" : "it goes by its pid alone");
                pin = std::max(pin, -1);
            }
            paused.emplace(pid, pin);
            pin = -1; // kept until the process is resumed or released
            save();
        } else if (text[0] == 'R' && pid && paused.count(pid)) {
            forget(paused.find(pid));
            save();
        } else if (!pid) {
            HAL_LOG_WARN("guardian: ignored a message of %zu bytes", n);
        }
        if (pin >= 0)
            close(pin);
    };
    // Reads every message waiting; false once the socket is closed.
    auto drain = [&] {
        for (;;) {
            auto m = coordination::receiveFdMessage(sock, 32, "a message of criu");
            if (!m.ok())
                return m.error().sysErrno() == EAGAIN || m.error().sysErrno() == EINTR;
            if (m->end)
                return false;
            if (m->bytes.empty()) {
                for (int fd : m->fds)
                    close(fd);
                continue;
            }
            take(*m);
        }
    };
    while (!dismissed && !socketClosed && !criuEnded) {
        struct pollfd fds[2] = {{sock, POLLIN, 0}, {criuPidfd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            HAL_LOG_ERROR("guardian: poll: %s", strerror(errno));
            break;
        }
        if (fds[0].revents)
            socketClosed = !drain();
        if (fds[1].revents) {
            criuEnded = true;
            socketClosed = !drain() || socketClosed;
        }
    }
    if (dismissed) {
        for (auto it = paused.begin(); it != paused.end();)
            it = forget(it);
        save();
        if (gLogFd >= 0)
            unlink(coordination::guardianLogPath(options.dir, criuPid).c_str());
        return 0;
    }
    if (!criuEnded) {
        // criu's files close before its tracees are let go: wait for its end before acting.
        struct pollfd p = {criuPidfd, POLLIN, 0};
        criuEnded = poll(&p, 1, options.exitWaitMs) == 1;
    }
    HAL_LOG_WARN("guardian: criu %d %s in the middle of a dump; releasing the GPU work of %zu "
                 "process(es) it had paused",
                 criuPid, criuEnded ? "died" : "closed its end", paused.size());
    std::vector<int> stay = releaseSideBySide(paused, {options.release, options.backend, criuPid,
                                                       options.releaseWaitMs, &guardianLogSink});
    for (auto it = paused.begin(); it != paused.end();)
        it = std::find(stay.begin(), stay.end(), it->first) == stay.end() ? forget(it) : ++it;
    save();
    return static_cast<int>(paused.size());
}

} // namespace frontend
