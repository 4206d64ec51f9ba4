#pragma once
// A shared library formats/ loads when it first needs it (dlopen by soname, found as the dynamic
// loader finds a library a program links), never linked, so that a dump or restore that does
// not need it never maps it: libcrypto (libcrypto_on_demand.h), lz4 and zstd
// (codec_libraries.h). Each user defines the library's functions it calls, hidden, with the
// library's own prototypes, as forwards to what load() resolved.
#include "base/result.h"

#include <span>
#include <string>
#include <vector>

// The pieces each user makes of its list X(return type, name, (parameters), (arguments)):
// HAL_ON_DEMAND_INDEX an enumerator k_NAME per function, HAL_ON_DEMAND_NAME its name, and
// HAL_ON_DEMAND_FORWARD the hidden forward (only formats/ calls it: nothing else in the process
// finds it in place of the library's own), which needs `hal::function(hal::k_NAME)` to give the
// address load() resolved. HAL_ON_DEMAND_SONAME("libx.so.", MAJOR) is "libx.so.<MAJOR>".
#define HAL_ON_DEMAND_INDEX(ret, name, params, args) k_##name,
#define HAL_ON_DEMAND_NAME(ret, name, params, args) #name,
#define HAL_ON_DEMAND_FORWARD(ret, name, params, args)                                             \
    extern "C" __attribute__((visibility("hidden"))) ret name params {                             \
        return reinterpret_cast<decltype(&::name)>(formats::function(formats::k_##name)) args;     \
    }
#define HAL_ON_DEMAND_STRINGIZE(n) #n
#define HAL_ON_DEMAND_SONAME(base, major) base HAL_ON_DEMAND_STRINGIZE(major)

namespace formats {

using base::Result;

/// One load of a library: the address of each function asked for, or why it could not be loaded.
struct LoadedLibrary {
    std::vector<void*> functions;
    std::string error; ///< empty when every function was found
};

/// dlopen(`name`) (never closed: its functions stay valid for the life of the process, as a
/// linked library's would) and every function of `functions` resolved in it.
LoadedLibrary loadLibrary(const char* name, std::span<const char* const> functions);

/// Success when `loaded` has every function; otherwise an error naming the library `name`,
/// `neededBy` (the option or checkpoint that needed it) and the Debian package that has it.
Result<void> libraryLoaded(const LoadedLibrary& loaded, const char* name, const char* neededBy,
                           const char* package);

/// The address of function `index` of `loaded`; ends the process, naming the function and the
/// library, when the library could not be loaded (a forward called without the check its entry
/// point makes first: a defect).
void* loadedFunction(const LoadedLibrary& loaded, size_t index, const char* const* names,
                     const char* library);

} // namespace formats
