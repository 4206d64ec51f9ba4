#pragma once
/// \file
/// Whether a path may be trusted to hold code or configuration the plugin acts on.
///
/// criu runs as root, so a file that picks which shared objects the plugin loads (`backend-dir`),
/// what it is configured to do (`config`, `options-file`), which simulated machine it drives
/// (`mock-root`) or which key opens a checkpoint must not be writable by anyone but root. The
/// rule is sshd's and sudo's: the path, after its links are resolved, and every directory above
/// it must be owned by root (or by the user running the command) and not writable by group or
/// others. A directory above it that others may write is accepted only when it is root's and
/// sticky (like /tmp), where nobody else can rename or remove what root put there.

#include "base/result.h"

#include <string>

namespace hal {

/// What the trusted path must be.
enum class TrustedKind { File, Directory };

/// Checks `path` against the rule above. `option` names where the path came from (an option
/// name such as "backend-dir") and appears in the error, with the component at fault and why.
Result<void> checkTrustedPath(const std::string& path, const char* option, TrustedKind kind);

} // namespace hal
