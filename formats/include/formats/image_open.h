#pragma once
/// \file
/// How every image file of a checkpoint is opened: as hostile input. A checkpoint directory may
/// come from a registry, so a name in it may be a symbolic link to a host file, a FIFO that would
/// hang the reader, a device node, or a path that climbs out of the checkpoint.
///
/// A name is walked component by component from the image directory's fd, each component opened
/// with O_NOFOLLOW and the fds held, so ".." goes back to a directory already opened, never to
/// what the kernel's ".." of a moved directory would be. Rules:
/// - an absolute path, or one that climbs above the image directory's parent, is refused before
///   anything is opened (a parent chain lives beside its child: criu's `parent` link, option
///   `parent-images`);
/// - a directory component may be a relative symbolic link (criu's `parent` link is one) whose
///   target stays within those bounds; an absolute link is refused;
/// - the file itself is never a link, and must be a regular file: it is opened once with
///   O_PATH|O_NOFOLLOW (no driver's open is called), judged with fstat on that fd, and only then
///   opened for reading through /proc/self/fd/N of that fd, which reopens the same inode whatever
///   its name names by then; that open has O_NONBLOCK (a FIFO is never waited on) and its fd must
///   be the same device and inode as the one judged, then O_NONBLOCK is cleared.
/// Every refusal names the path and what it is.

#include "base/result.h"

#include <string>

namespace formats {

using base::Result;

/// Opens regular file `path` (relative to directory `dirFd`) read-only, under the rules above:
/// an fd, close-on-exec. NotFound when it does not exist; Image when it is refused.
Result<int> openImageFile(int dirFd, const std::string& path);

/// Opens directory `path` (relative to `dirFd`) read-only, under the same bounds; a final
/// component that is a relative link staying within them is followed (criu's `parent` link).
Result<int> openImageDirectory(int dirFd, const std::string& path);

/// Refuses `path` (an image name relative to the image directory) when it is absolute, empty,
/// or lexically climbs above the image directory's parent; `what` names who gave the path.
Result<void> checkImagePath(const std::string& path, const std::string& what);

} // namespace formats
