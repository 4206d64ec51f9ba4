#pragma once
/// \file
/// Paths joined and split as text, as the registry and the YAML loader find their libraries:
/// std::filesystem would map that part of libstdc++ into every criu run the plugin lives in, for
/// two string operations.

#include <string>

namespace base {

/// `dir` + "/" + `name` ("name" for an empty dir, one slash where dir ends with one).
inline std::string joinPath(const std::string& dir, const std::string& name) {
    if (dir.empty())
        return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// The directory part of `path`: "" for a bare name, "/" for a name at the root.
inline std::string parentOf(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return "";
    return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace base
