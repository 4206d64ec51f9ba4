#pragma once
/// \file
/// A pidfd that pins the process a dump paused, so that whoever acts on it later (the dump's
/// guardian, a backend's release) never acts on another process given the same pid after it
/// exited. A pid names a process only while that process has not been reaped; a pidfd names the
/// same process for as long as it is open, and says when that process is gone.
///
/// How a later step uses it: a step that goes through the pidfd (pidfd_send_signal, pidfd_getfd)
/// cannot reach another process; a step that can only name a pid (ptrace, /proc/<pid>) is
/// preceded by pinnedProcessAlive(): while the pinned process has not been reaped, no other
/// process can hold its pid. Once the caller is the process's tracer (PTRACE_SEIZE), the process
/// cannot be reaped by anyone else, and a check made after the seize holds until the detach.

namespace coordination {

/// pidfd_open(pid): a new close-on-exec pidfd, or -errno.
int openProcessPin(int pid);

/// Whether the process `pidfd` pins has not been reaped (a zombie still counts, as its pid is
/// still its own): the "Pid:" line of /proc/self/fdinfo/<pidfd> is -1 once it is gone. False as
/// well when the fd is no pidfd or cannot be read.
bool pinnedProcessAlive(int pidfd);

/// pidfd_send_signal(pidfd, sig): 0 or -errno (-ESRCH when the pinned process exited).
int signalPinnedProcess(int pidfd, int sig);

} // namespace coordination
