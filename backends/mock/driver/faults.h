#pragma once
/// \file
/// Fault injection by configuration: ROOT/faults holds lines "<operation> <n>" meaning "the n-th
/// call of operation fails" (counted across processes in ROOT/state/fault-counters), or
/// "<operation> always". Operations: alloc, submit, pause, checkpoint, read-bo, write-images,
/// unpause, restore, write-bo, resume.

#include "hal/result.h"

#include <string>
#include <vector>

namespace mock {

/// Counts one call of `operation`; an Injected error when the configuration says it fails.
hal::Result<void> checkFault(const std::string& root, const std::string& operation);

/// The operations faults can be injected into.
const std::vector<std::string>& faultOperations();

/// Checks a fault before anything is written: the operation must be one of faultOperations() and
/// `when` a call number (1-based) or "always"; an InvalidArgument error saying what is accepted.
hal::Result<void> validateFault(const std::string& operation, const std::string& when);

/// Adds a fault line; the fault must pass validateFault.
hal::Result<void> addFault(const std::string& root, const std::string& operation,
                           const std::string& when);

/// Removes every fault and counter.
hal::Result<void> clearFaults(const std::string& root);

} // namespace mock
