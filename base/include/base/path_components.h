#pragma once
/// \file
/// A path split into its components, for walks that open one component at a time.

#include <deque>
#include <string>

namespace base {

/// The components of `path` in order, without the empty ones and ".": "/a//./b/" gives a, b.
inline std::deque<std::string> pathComponents(const std::string& path) {
    std::deque<std::string> parts;
    size_t at = 0;
    while (at <= path.size()) {
        size_t slash = path.find('/', at);
        if (slash == std::string::npos)
            slash = path.size();
        std::string part = path.substr(at, slash - at);
        if (!part.empty() && part != ".")
            parts.push_back(std::move(part));
        at = slash + 1;
    }
    return parts;
}

} // namespace base
