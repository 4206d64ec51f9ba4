#pragma once
/// \file
/// A library the registry loads with dlopen (RTLD_LAZY | RTLD_LOCAL), closed with its owner; and
/// the paths it is found at, joined and split as strings. Plain dlopen and string operations,
/// not Boost.DLL and std::filesystem: what the plugin maps into criu to load its backends is
/// counted in criu's memory (libstdc++'s filesystem code alone is a 64 KiB window of it).

#include <dlfcn.h>
#include <string>

namespace hal {

class LoadedLibrary {
public:
    LoadedLibrary() = default;
    ~LoadedLibrary() {
        if (handle_)
            dlclose(handle_);
    }
    LoadedLibrary(const LoadedLibrary&) = delete;
    LoadedLibrary& operator=(const LoadedLibrary&) = delete;

    /// Loads `path`; false with the loader's message in `why` when it cannot.
    bool open(const std::string& path, std::string* why) {
        handle_ = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
        if (!handle_) {
            const char* message = dlerror();
            *why = message ? message : "unknown error";
        }
        return handle_ != nullptr;
    }
    /// Adopts a handle dlopen returned (closed with this object).
    void adopt(void* handle) { handle_ = handle; }
    bool isOpen() const { return handle_ != nullptr; }
    /// The address of `name` in the library, or null.
    void* symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

private:
    void* handle_ = nullptr;
};

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

} // namespace hal
