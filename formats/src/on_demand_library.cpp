#include "on_demand_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;

LoadedLibrary loadLibrary(const char* name, std::span<const char* const> functions) {
    LoadedLibrary out;
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        out.error = why ? why : "dlopen failed";
        return out;
    }
    out.functions.resize(functions.size());
    for (size_t i = 0; i < functions.size(); ++i) {
        out.functions[i] = dlsym(handle, functions[i]);
        if (out.functions[i] == nullptr) {
            out.error = std::string("it has no function ") + functions[i];
            return out;
        }
    }
    return out;
}

Result<void> libraryLoaded(const LoadedLibrary& loaded, const char* name, const char* neededBy,
                           const char* package) {
    if (loaded.error.empty())
        return {};
    return makeError(ErrorCode::Config,
                     "%s needs %s, which cannot be loaded: %s (Debian's package %s has it)",
                     neededBy, name, loaded.error.c_str(), package);
}

void* loadedFunction(const LoadedLibrary& loaded, size_t index, const char* const* names,
                     const char* library) {
    if (!loaded.error.empty()) {
        std::fprintf(stderr, "criu-amdgpu: %s called without %s (%s)\n", names[index], library,
                     loaded.error.c_str());
        std::abort();
    }
    return loaded.functions[index];
}

} // namespace formats
