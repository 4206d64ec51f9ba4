#pragma once
/// \file
/// The name a checked library is loaded under: "/proc/self/fd/N" of the fd that was judged.

#include "base/trusted_path.h"

#include <string>

namespace base {

/// A path opening the object `checked` holds ("/proc/self/fd/" + "./" ... + N), spelled as no
/// earlier call of this process spelled it. The dynamic loader hands back an object already
/// loaded under the name asked for without opening anything, and an object keeps every name it
/// was asked for under: "/proc/self/fd/N" alone, once N was closed and reused for another file,
/// would load the earlier file. Each call puts a different run of "." components between "fd/"
/// and N (one per decimal digit of a counter, each followed by digit + 1 slashes), which the
/// kernel resolves to the same magic link.
std::string uniqueFdLibraryName(const TrustedPath& checked);

} // namespace base
