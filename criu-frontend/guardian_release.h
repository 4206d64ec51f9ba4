#pragma once
/// \file
/// How the dump's guardian releases what a dead criu left paused: every process at once, each in
/// a worker process of its own, each within a bound. One process that cannot be released (its
/// task in a frozen cgroup or an uninterruptible sleep, a driver call that does not return)
/// delays no other, and never keeps the guardian from ending: its worker is killed when the bound
/// passes (which also lets go of a task the worker had attached with ptrace), and the guardian
/// says which process and which step it could not finish.
///
/// Each process comes with the pidfd taken when it was paused (coordination/process_pin.h): a
/// process that exited since is not released, and whatever process was given its pid is not
/// touched; the backend is handed the pidfd for the checks of its own steps.

#include "base/log.h"
#include "base/result.h"
#include "hal/device.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace frontend {

/// What the guardian does for one process criu left paused (in a worker of the guardian's):
/// `pidfd` pins the process paused under `pid`, or is -1 when no pin could be taken.
using ReleasePaused = std::function<base::Result<hal::PausedRelease>(int pid, int pidfd)>;

/// How the guardian releases.
struct SideBySideRelease {
    ReleasePaused release;
    std::string backend; ///< its name, for the messages
    int criuPid = 0;     ///< for the messages
    int waitMs = 10000;  ///< the bound on all of the releases together
    /// Where the guardian's lines go; in a worker, each line the backend logs is also its
    /// latest step, which the guardian names if the bound passes.
    base::LogSink logSink = nullptr;
};

/// Releases every process of `paused` (pid -> its pin, or -1) side by side, waiting at most
/// `how.waitMs` for all of them; logs what happened to each (HAL_LOG_*) and returns the pids
/// that stay paused (failed, or unfinished within the bound).
std::vector<int> releaseSideBySide(const std::map<int, int>& paused, const SideBySideRelease& how);

} // namespace frontend
