#pragma once
// A small file of the kernel's (/proc/devices, /proc/self/cmdline) read whole with read(2), not
// through iostreams: a stream's first use sets up libstdc++'s locales, which leaves about 0.6 MiB
// of libstdc++ resident in criu for the rest of its run.
#include <cstddef>
#include <optional>
#include <string>

namespace base {

/// The bytes of `path`, at most `limit` of them; nullopt when it cannot be opened or read.
std::optional<std::string> readSmallFile(const std::string& path, size_t limit);

} // namespace base
