#include "base/library_name.h"

#include <atomic>
#include <cstdint>

namespace base {

std::string uniqueFdLibraryName(const TrustedPath& checked) {
    static std::atomic<uint64_t> calls{0};
    std::string name = "/proc/self/fd/";
    for (char digit : std::to_string(calls.fetch_add(1))) {
        name.push_back('.');
        name.append(size_t(digit - '0') + 1, '/');
    }
    name.append(std::to_string(checked.fd()));
    return name;
}

} // namespace base
