#pragma once
/// \file
/// The mock driver's counterpart of a kernel releasing a file when its last fd is closed: a
/// context that no process holds open any more (its process exited or was killed, and no child
/// inherited the fd) is removed with its BOs. Memory an orphan shared with live contexts stays
/// theirs (its data file has other links). Contexts of a restore not yet resumed are left to that
/// restore while its criu runs (those of a criu killed mid-restore are reaped like any other),
/// and a context being opened or inside a driver call (its lock taken) is skipped. The hidden
/// directories of contexts whose creator died before finishing them go too.
///
/// A process sees every holder only from the initial pid namespace (a container's /proc lists
/// the container's processes alone), so elsewhere nothing is reaped.

#include "base/result.h"

#include <cstddef>
#include <string>

namespace mock {

/// Removes the orphaned contexts of the machine at `root`; how many it removed.
base::Result<size_t> reapOrphanedContexts(const std::string& root);

/// Whether this process is in the initial pid namespace, where it sees every process.
bool seesEveryProcess();

} // namespace mock
