#pragma once
/// \file
/// Whether a path may be trusted to hold code or configuration the plugin acts on, and the
/// object it named, held open so that what is used is what was checked.
///
/// criu runs as root, so a file that picks which shared objects the plugin loads (`backend-dir`),
/// what it is configured to do (`config`, `options-file`), which simulated machine it drives
/// (`mock-root`) or which key opens a checkpoint must not be writable by anyone but root. The
/// rule is sshd's and sudo's: the object the path names and every directory on the way to it must
/// be owned by root (or by the user running the command) and not writable by group or others. A
/// directory on the way that others may write is accepted only when it is root's and sticky (like
/// /tmp), where nobody else can rename or remove what root put there; a symbolic link on the way
/// must be owned by root or that user too (in such a directory anyone may leave one).
///
/// The path is walked one component at a time from "/" (from the working directory's own walk
/// for a relative path), each opened with O_PATH | O_NOFOLLOW, which calls no device driver, and
/// judged with fstat on that fd before anything below it is opened. A link is read and followed
/// only after the directory holding it was judged, and its target is walked the same way (at most
/// 40 links, as the kernel). The result is the O_PATH fd of the object judged: callers read or
/// load through it (procPath()), never by the name again.

#include "base/result.h"

#include <string>
#include <sys/stat.h>

namespace base {

/// What the trusted path must be.
enum class TrustedKind {
    File,
    Directory,
    /// A regular file, or the null device (a configuration file named /dev/null: no settings).
    /// The null device is never opened; it reads as empty.
    FileOrNullDevice,
};

/// The object a trusted path named, held open with O_PATH (no driver's open was called), and its
/// fstat as it was judged.
class TrustedPath {
public:
    TrustedPath() = default;
    TrustedPath(int fd, const struct stat& status, std::string resolved)
        : fd_(fd), status_(status), resolved_(std::move(resolved)) {}
    ~TrustedPath();
    TrustedPath(TrustedPath&& other) noexcept;
    TrustedPath& operator=(TrustedPath&& other) noexcept;
    TrustedPath(const TrustedPath&) = delete;
    TrustedPath& operator=(const TrustedPath&) = delete;

    /// The O_PATH fd of the object.
    int fd() const { return fd_; }
    /// Its fstat when it was judged.
    const struct stat& status() const { return status_; }
    /// Where the walk ended, links resolved ("/srv/gpu/backends"): for messages.
    const std::string& resolved() const { return resolved_; }
    /// "/proc/self/fd/N": opening it (dlopen, open) opens exactly this object.
    std::string procPath() const;
    /// The null device (only ever accepted as TrustedKind::FileOrNullDevice).
    bool isNullDevice() const;

private:
    int fd_ = -1;
    struct stat status_ {};
    std::string resolved_;
};

/// Walks `path` as above and returns its object when it passes the rule. `option` names where the
/// path came from (an option name such as "backend-dir") and appears in the error, with the
/// component at fault and why.
Result<TrustedPath> openTrustedPath(const std::string& path, const char* option, TrustedKind kind);

/// The same for `name` inside the trusted directory `dir` (already judged, with every directory
/// above it): the walk starts at dir's fd. `shownAs` is the path errors name (dir + "/" + name).
Result<TrustedPath> openTrustedPathAt(const TrustedPath& dir, const std::string& name,
                                      const std::string& shownAs, const char* option,
                                      TrustedKind kind);

/// openTrustedPath, the object closed again: for a check made early (when the configuration is
/// loaded) that the code using the path repeats when it opens it.
Result<void> checkTrustedPath(const std::string& path, const char* option, TrustedKind kind);

/// At most `limit` + 1 bytes of the trusted file (a caller refuses more than `limit`), read
/// through its fd (reopened through procPath() for reading, O_NONBLOCK | O_NOCTTY); "" for the
/// null device, which is not opened. The error carries errno and names the resolved path.
Result<std::string> readTrustedFile(const TrustedPath& file, size_t limit);

} // namespace base
