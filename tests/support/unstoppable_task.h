#pragma once
/// \file
/// A child process that cannot enter a ptrace stop: PTRACE_INTERRUPT is queued but the task never
/// reports the stop, so a waitpid() for it blocks for as long as the task stays so. Two ways:
///
/// - Frozen: the task in a cgroup v1 freezer set to FROZEN (the task sleeps in the refrigerator
///   and handles no trap until thawed). cgroup v2's cgroup.freeze lets ptrace stop its tasks, so
///   it does not serve here.
/// - VforkParent: the task vfork()ed a child that never execs or exits; the task sleeps in the
///   kernel, uninterruptibly ('D', TASK_KILLABLE: only SIGKILL wakes it) until its child lets go.

#include <string>

namespace testsupport {

class UnstoppableTask {
public:
    enum class Kind { Frozen, VforkParent };
    /// Starts the task; check ok() (a machine without a cgroup v1 freezer has no Frozen task).
    explicit UnstoppableTask(Kind kind);
    /// Thaws (Frozen) or ends the vfork child, then kills and reaps the task.
    ~UnstoppableTask();
    UnstoppableTask(const UnstoppableTask&) = delete;
    UnstoppableTask& operator=(const UnstoppableTask&) = delete;

    bool ok() const { return error_.empty(); }
    /// Why it could not be made.
    const std::string& error() const { return error_; }
    int pid() const { return pid_; }
    /// The state letter of /proc/<pid>/stat ('S', 'D', 'T'...), or '?'.
    char state() const;
    /// Lets the task run again (thaws it, or ends its vfork child).
    void letGo();

private:
    Kind kind_;
    int pid_ = -1;
    int vforkChild_ = -1;
    std::string cgroup_; ///< the freezer cgroup made for it (Frozen)
    std::string error_;
};

/// The freezer hierarchy of cgroup v1 on this machine, or "" when there is none.
std::string cgroupV1Freezer();

} // namespace testsupport
