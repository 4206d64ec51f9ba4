#pragma once
/// \file
/// The path an open file descriptor of this process refers to, as /proc/self/fd shows it.

#include <string>

namespace frontend {

/// The target of /proc/self/fd/`fd`; "" when it cannot be read.
std::string fdPath(int fd);

} // namespace frontend
