#pragma once
/// \file
/// The dump's guardian: a small process outside criu that lets the GPU work of the dumped
/// processes run again when criu dies in the middle of a dump (the OOM killer, a container
/// engine's timeout, `kill -9`), when no hook of the plugin will ever run again.
///
/// The plugin starts it just before the dump first pauses a process that holds an AMD GPU file
/// (never for a dump of processes without one) and tells it, over a socket only criu holds, which
/// processes are paused and which were resumed. Started by fork from criu and detached (a session
/// of its own, reparented to init, its working directory /, every fd closed except its end of the
/// socket and a pidfd of criu), it holds no file criu dumps, traces nothing while criu lives, and
/// survives criu's SIGKILL.
///
/// It learns of criu's death from the pidfd (and the socket's end) and then releases every process
/// still paused through the backend's own call (hal::Device::releasePaused: KFD's UNPAUSE,
/// the mock's unpause), writing what it did to `DIR/guardian-<criu pid>.log` and to syslog. A
/// normal end of the dump (DUMP_FINISH, DUMP_DEVICES_LATE, the plugin's exit) dismisses it first:
/// it never touches a process criu finished with. While it watches, `DIR/paused-<criu pid>`
/// (coordination/paused_record.h) lists the paused processes for `criu-amdgpu paused`.
///
/// Messages (one SOCK_SEQPACKET datagram each): "P <pid>" paused (or about to be), with a pidfd of
/// the process (SCM_RIGHTS), "R <pid>" resumed or never paused, "D" dismissed. The guardian's
/// first message to criu is "G <pid>". It releases every process at once, each within a bound
/// (guardian_release.h), and never acts on a process that exited since criu paused it.

#include "guardian_release.h"

#include "base/result.h"
#include "hal/device.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace frontend {

/// How a guardian is set up.
struct GuardianOptions {
    std::string dir;     ///< where its record and log go (coordination::kDefaultGuardianDir)
    std::string backend; ///< the backend's name, for the record and the log
    ReleasePaused release;
    /// How long the guardian waits, after criu's socket closed, for criu's process to end (its
    /// tracees are detached only then) before it releases anyway.
    int exitWaitMs = 2000;
    /// How long the guardian waits for the releases (all at once, each in a worker of its own,
    /// guardian_release.h) before it gives up on those not done.
    int releaseWaitMs = 10000;
};

/// criu's end of a running guardian.
class DumpGuardian {
public:
    /// Forks the guardian off the calling process (criu) and waits until it is ready.
    static base::Result<std::unique_ptr<DumpGuardian>> start(GuardianOptions options);
    /// Dismisses the guardian (a normal end).
    ~DumpGuardian();
    DumpGuardian(const DumpGuardian&) = delete;
    DumpGuardian& operator=(const DumpGuardian&) = delete;

    /// `pid` is about to be paused: the guardian releases it if criu dies from now on. A pidfd
    /// of it, taken now (criu holds the process, so the pid is its own), goes with the message:
    /// the guardian acts on that process or on none.
    void expect(int pid);
    /// The processes paused now: tells the guardian of new ones and of those resumed since.
    void track(const std::vector<int>& paused);
    /// A normal end: the guardian exits without touching anything. Idempotent.
    void dismiss();

    /// The guardian's pid.
    int pid() const { return pid_; }
    /// Its log file.
    const std::string& logPath() const { return logPath_; }

private:
    DumpGuardian(int sock, int pid, std::string logPath)
        : sock_(sock), pid_(pid), logPath_(std::move(logPath)) {}
    /// Sends one message, with `fd` (SCM_RIGHTS) when it is >= 0; never blocks.
    void send(const std::string& message, int fd = -1);

    int sock_ = -1;
    int pid_ = 0;
    std::string logPath_;
    std::set<int> told_; ///< pids the guardian holds as paused
    bool sendFailed_ = false;
};

/// The guardian's own loop, in the guardian process: reads criu's messages from `sock` until
/// "D" (returns 0) or criu's end (`criuPidfd` readable, or the socket closed), then releases what
/// is paused; returns the number of processes it could not release. Exposed for tests.
int runGuardian(int sock, int criuPidfd, int criuPid, const GuardianOptions& options);

} // namespace frontend
