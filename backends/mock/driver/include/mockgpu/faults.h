#pragma once
/// \file
/// Fault injection by configuration: ROOT/faults holds lines "<operation> <n>" meaning "the n-th
/// call of operation fails" (counted across processes in ROOT/state/fault-counters), or
/// "<operation> always". Operations: alloc, submit, pause, checkpoint, read-bo, write-images,
/// unpause, restore, import, write-bo, resume.
///
/// A line "<operation> <n> <ERRNO>" ("read-bo 2 EIO") makes that call fail with that errno, as a
/// kernel call fails (the fault sweep of tests/mock/fault_sweep_test.cpp). Any faults file, even
/// one of comments only, makes every call counted.
///
/// A line "<operation> <n> stall" makes that call wait before it runs instead of failing: it
/// writes ROOT/faults.stalled ("<operation> <call> <pid>", the pid of the process that waits as
/// /proc numbers it: in the pid namespace of the /proc it sees, the host's for a task criu
/// restores into a pid namespace of its own) and
/// waits until that file is removed (by a test, or by clearFaults), then runs as if no fault
/// were configured; after kStallSeconds it fails with an Injected error. It holds no lock while
/// it waits. This is how a test does something from outside at an exact point of a dump or a
/// restore (kill a process that criu has paused, before its device is checkpointed).

#include "base/result.h"

#include <string>
#include <vector>

namespace mock {

/// What a configured fault does to its call.
enum class FaultKind {
    Fail,  ///< the call fails with an Injected error
    Stall, ///< the call waits until ROOT/faults.stalled is removed, then runs
};

/// Longest a stalled call waits for its release.
inline constexpr int kStallSeconds = 30;

/// ROOT/faults.stalled: exists while a stalled call waits.
std::string stallMarker(const std::string& root);

/// Counts one call of `operation`; an Injected error when the configuration says it fails.
base::Result<void> checkFault(const std::string& root, const std::string& operation);

/// The operations faults can be injected into.
const std::vector<std::string>& faultOperations();

/// Checks a fault before anything is written: the operation must be one of faultOperations() and
/// `when` a call number (1-based) or "always"; an InvalidArgument error saying what is accepted.
base::Result<void> validateFault(const std::string& operation, const std::string& when);

/// Adds a fault line; the fault must pass validateFault.
base::Result<void> addFault(const std::string& root, const std::string& operation,
                            const std::string& when, FaultKind kind = FaultKind::Fail);

/// Adds a fault line that fails the call with errno `err`; the fault must pass validateFault.
base::Result<void> addErrnoFault(const std::string& root, const std::string& operation,
                                 const std::string& when, int err);

/// Calls of `operation` counted since faults were configured (ROOT/state/fault-counters).
uint64_t countedCalls(const std::string& root, const std::string& operation);

/// Removes every fault and counter, and releases a stalled call.
base::Result<void> clearFaults(const std::string& root);

} // namespace mock
