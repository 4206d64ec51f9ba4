#pragma once
/// \file
/// The flags the kernel gives a mapping of this process (the VmFlags line of /proc/self/smaps:
/// `hg` for MADV_HUGEPAGE, `dd` for MADV_DONTDUMP...), for tests of how memory was advised.

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace testsupport {

/// The VmFlags of the mapping of this process that holds `address`; empty when none does.
inline std::string vmFlagsAt(const void* address) {
    auto at = reinterpret_cast<uintptr_t>(address);
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        uintptr_t from = 0, to = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> from >> dash >> to && dash == '-') {
            inside = from <= at && at < to;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0)
            return line.substr(8);
    }
    return "";
}

/// Whether `flags` (vmFlagsAt) holds `flag`.
inline bool hasFlag(const std::string& flags, const std::string& flag) {
    std::istringstream words(flags);
    for (std::string w; words >> w;)
        if (w == flag)
            return true;
    return false;
}

} // namespace testsupport
