#pragma once
/// \file
/// A file opened again through /proc/self/fd/N of an fd already open on it (an O_PATH fd, or a
/// reader's fd reopened with O_DIRECT): the same inode whatever its name names by then, checked
/// by device and inode against what was judged, so that nothing else is ever read should
/// /proc/self/fd/N lead elsewhere (no procfs mounted there, or the fd replaced).

#include "base/result.h"

#include <sys/stat.h>

namespace formats {

using base::Result;

/// Opens the file `fd` is open on with `flags` (O_CLOEXEC added): an fd of the same device and
/// inode as `judged`. Io when the open fails; Image, the fd closed, when it is another file.
/// `what` names the file in messages.
Result<int> reopenSameFile(int fd, int flags, const struct stat& judged, const std::string& what);

/// Tests only: called with `fd` just before reopenSameFile opens /proc/self/fd/`fd` (where a race
/// would swap what a name names, or what the fd is).
extern void (*reopenHook)(int fd);

} // namespace formats
