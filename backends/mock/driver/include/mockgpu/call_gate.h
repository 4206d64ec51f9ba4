#pragma once
/// \file
/// The call gate: what makes a mock driver call atomic with respect to a freeze, as an ioctl is.
///
/// A kernel never lets a task be frozen in the middle of an ioctl: the call completes, or it
/// returns to be restarted, before the task stops. The mock driver runs inside the calling process,
/// where criu can stop a task at any instruction: in the middle of a call, holding files of the
/// driver open and a context's lock, with buffers half written. So the checkpoint side closes the
/// gate of a process before criu freezes it (criu 4.0+ pauses devices before it freezes a task)
/// and waits until the calls of that process in progress have ended. Later calls wait at the gate,
/// holding nothing, until the checkpoint opens it again: a frozen task is never inside a call.
///
///   ROOT/state/gate/<task>.held        the gate of <task> is closed: a symlink naming the thread
///                                      that closed it ("<pid namespace inode>-t<tid>"), whose own
///                                      calls pass (a thread is never frozen by its own pause)
///   ROOT/state/gate/<task>.call-<tid>  a call in progress of thread <tid> (a symlink naming it)
///
/// <task> is "<pid namespace inode>-<pid in that namespace>": what a process knows of itself
/// without a file descriptor, and what the checkpoint side reads in /proc/<pid> (in a container
/// too). A thread announces its call and then looks at the gate; a checkpoint closes the gate and
/// then looks at the announcements: whichever comes second sees the other. Announcing, looking and
/// waiting use no file descriptor (symlink, access, unlink), so criu never finds a file of the
/// driver open in a task held at the gate. A child forked while its parent's gate is closed waits
/// at its parent's gate too.

#include "base/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mock {

/// A process as the gate names it.
struct TaskKey {
    uint64_t pidNamespace = 0; ///< inode of its pid namespace
    int pid = 0;               ///< its pid in that namespace
    /// "<pidNamespace>-<pid>".
    std::string name() const;
};

/// The key of process `hostPid` (a pid of the caller's /proc), from /proc/<pid>/ns/pid and the
/// last NSpid of /proc/<pid>/status.
base::Result<TaskKey> taskKeyOf(int hostPid);

/// A driver call of the calling thread: entered at the gate, left when destroyed.
class GateCall {
public:
    GateCall() = default;
    ~GateCall();
    GateCall(const GateCall&) = delete;
    GateCall& operator=(const GateCall&) = delete;

    /// Waits while the gate of the calling process (or of its parent) is closed by a thread other
    /// than the calling one, then announces the call `what` on the machine at `root`. Fails after
    /// two minutes of a closed gate.
    base::Result<void> enter(const std::string& root, const std::string& what);
    /// Withdraws the announcement (also done by the destructor).
    void leave();

private:
    std::string announcement_;
};

/// What closing a gate found.
struct HeldCalls {
    TaskKey key;
    std::vector<std::string> waitedFor; ///< the calls in progress it waited for ("tid N: what")
};

/// Closes the gate of process `hostPid` and waits until its calls in progress have ended, at most
/// `timeoutMs`. A thread that is stopped or frozen inside a call (by something that did not close
/// the gate first) can never end it: that fails at once, naming the thread, the call and what
/// stopped it, and the gate is opened again. Announcements of threads that no longer exist are
/// removed.
base::Result<HeldCalls> holdCalls(const std::string& root, int hostPid, int timeoutMs);

/// Opens the gate of `key` again; a gate that is open already is fine.
base::Result<void> releaseCalls(const std::string& root, const TaskKey& key);

/// Whether the gate of `key` is closed.
bool callsHeld(const std::string& root, const TaskKey& key);

/// The pids of every descendant of `hostPid` (from /proc/<pid>/task/<tid>/children).
std::vector<int> descendantsOf(int hostPid);

} // namespace mock
