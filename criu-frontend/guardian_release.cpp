#include "guardian_release.h"

#include "criu_services.h"

#include "coordination/process_pin.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>

namespace frontend {
namespace {

/// A worker's report, one line each: 'S' the step it starts, 'X' the pinned process exited (not
/// released, nothing touched), 'O' the backend's outcome (a hal::PausedRelease), 'E' its error.
enum Report : char { kStep = 'S', kExited = 'X', kOutcome = 'O', kError = 'E' };

/// Longest report line: one write of at most PIPE_BUF bytes is never interleaved.
constexpr size_t kMaxReport = 2048;

int gReportFd = -1;                    ///< in a worker: where its reports go
base::LogSink gGuardianSink = nullptr; ///< in a worker: the guardian's own sink

void report(int to, Report kind, const std::string& text) {
    std::string line(1, static_cast<char>(kind));
    line += text.substr(0, kMaxReport - 2);
    for (char& c : line)
        if (c == '\n')
            c = ' ';
    line += '\n';
    if (write(to, line.data(), line.size()) < 0) {
        // the guardian is gone or killed us: nothing to tell
    }
}

/// In a worker: the guardian's log, and every line the backend logs as the worker's latest step.
void workerLogSink(base::LogLevel level, const char* line) {
    if (gGuardianSink)
        gGuardianSink(level, line);
    if (level <= base::LogLevel::Info && gReportFd >= 0)
        report(gReportFd, kStep, line);
}

/// The worker of process `pid`: checks its pin, then lets the backend release it. Never returns.
[[noreturn]] void runWorker(int to, int pid, int pidfd, const SideBySideRelease& how) {
    gReportFd = to;
    gGuardianSink = how.logSink;
    base::setLogSink(&workerLogSink);
    redirectCriuLogSink(&workerLogSink); // the backends log through criu's sink
    report(to, kStep,
           "checking, with the pidfd taken when it was paused, that process " +
               std::to_string(pid) + " has not exited");
    if (pidfd >= 0 && !coordination::pinnedProcessAlive(pidfd)) {
        report(to, kExited, "");
        _exit(0);
    }
    report(to, kStep,
           "the " + how.backend + " backend's release of process " + std::to_string(pid));
    auto r = how.release(pid, pidfd);
    if (r.ok())
        report(to, kOutcome, std::to_string(static_cast<int>(*r)));
    else
        report(to, kError, r.error().describe());
    _exit(0);
}

/// One process being released, as the guardian sees its worker.
struct Worker {
    int pid = 0;         ///< the paused process
    pid_t worker = -1;   ///< the worker releasing it (-1: fork failed)
    int from = -1;       ///< the read end of the worker's reports
    std::string pending; ///< a report line not ended yet
    std::string step = "starting its worker";
    std::optional<std::string> outcome; ///< the last 'X', 'O' or 'E' line
    bool ended = false;                 ///< the worker closed its end
};

/// Reads what `w`'s worker wrote; marks it ended at the end of its reports.
void readReports(Worker& w) {
    char buf[4096];
    ssize_t n = read(w.from, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        w.ended = true;
        return;
    }
    w.pending.append(buf, static_cast<size_t>(n));
    for (size_t eol; (eol = w.pending.find('\n')) != std::string::npos;) {
        std::string line = w.pending.substr(0, eol);
        w.pending.erase(0, eol + 1);
        if (line.empty())
            continue;
        if (line[0] == kStep)
            w.step = line.substr(1);
        else
            w.outcome = line;
    }
}

Worker startWorker(int pid, int pidfd, const SideBySideRelease& how) {
    Worker w;
    w.pid = pid;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        w.outcome = std::string(1, kError) + "no pipe for its worker: " + strerror(errno);
        w.ended = true;
        return w;
    }
    w.worker = fork();
    if (w.worker == 0) {
        close(fds[0]);
        runWorker(fds[1], pid, pidfd, how);
    }
    int err = errno;
    close(fds[1]);
    w.from = fds[0];
    if (w.worker < 0) {
        w.outcome = std::string(1, kError) + "no worker (fork): " + strerror(err);
        w.ended = true;
    }
    return w;
}

/// Waits for every worker's end of reports until `waitMs` passed.
void awaitWorkers(std::vector<Worker>& workers, int waitMs) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(waitMs);
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<Worker*> owners;
        for (Worker& w : workers)
            if (!w.ended) {
                fds.push_back({w.from, POLLIN, 0});
                owners.push_back(&w);
            }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (fds.empty() || left.count() <= 0)
            return;
        int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()) + 1);
        if (n < 0 && errno != EINTR)
            return;
        for (size_t i = 0; n > 0 && i < fds.size(); ++i)
            if (fds[i].revents)
                readReports(*owners[i]);
    }
}

/// Ends `w`'s worker: killed when it is still at work; reaped when it has ended (one stuck in
/// the kernel is left to init, which adopts it when the guardian ends).
void endWorker(Worker& w) {
    if (w.worker > 0) {
        if (!w.ended)
            kill(w.worker, SIGKILL); // our own unreaped child: its pid cannot have been reused
        for (int i = 0; i < 100 && waitpid(w.worker, nullptr, WNOHANG) == 0; ++i)
            usleep(1000);
    }
    if (w.from >= 0)
        close(w.from);
}

/// Logs what became of `w`'s process; true when it no longer needs releasing.
bool concludeWorker(const Worker& w, const SideBySideRelease& how) {
    if (!w.ended) {
        HAL_LOG_ERROR("guardian: process %d stays paused: its release did not finish within %d ms "
                      "(a task in a frozen cgroup or an uninterruptible sleep?); the step it was "
                      "at: %s. Its worker %d was killed, which lets go of the process if it had "
                      "attached it; `criu-amdgpu paused release %d` retries",
                      w.pid, how.waitMs, w.step.c_str(), w.worker, w.pid);
        return false;
    }
    if (!w.outcome) {
        HAL_LOG_ERROR("guardian: process %d stays paused: its release's worker ended without an "
                      "answer, at: %s (criu-amdgpu paused release %d retries)",
                      w.pid, w.step.c_str(), w.pid);
        return false;
    }
    const std::string& o = *w.outcome;
    if (o[0] == kExited) {
        HAL_LOG_WARN("guardian: process %d exited since criu %d paused it (its pidfd says so): "
                     "nothing to release, and whatever process holds pid %d now is not touched",
                     w.pid, how.criuPid, w.pid);
        return true;
    }
    if (o[0] == kOutcome) {
        auto outcome = static_cast<hal::PausedRelease>(atoi(o.c_str() + 1));
        HAL_LOG_WARN("guardian: process %d: %s (criu %d died with it paused)", w.pid,
                     hal::pausedReleaseName(outcome), how.criuPid);
        return true;
    }
    HAL_LOG_ERROR("guardian: process %d stays paused: %s (criu-amdgpu paused release %d retries)",
                  w.pid, o.c_str() + 1, w.pid);
    return false;
}

} // namespace

std::vector<int> releaseSideBySide(const std::map<int, int>& paused, const SideBySideRelease& how) {
    std::vector<Worker> workers;
    for (const auto& [pid, pidfd] : paused)
        workers.push_back(startWorker(pid, pidfd, how));
    awaitWorkers(workers, how.waitMs);
    std::vector<int> stay;
    for (Worker& w : workers) {
        endWorker(w);
        if (!concludeWorker(w, how))
            stay.push_back(w.pid);
    }
    return stay;
}

} // namespace frontend
