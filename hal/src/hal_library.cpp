#include "hal_library.h"

#include "base/library_name.h"

#include <dlfcn.h>

namespace hal {

using base::ErrorCode;
using base::makeError;
using base::Result;

HalLibrary::~HalLibrary() {
    if (handle_)
        dlclose(handle_);
}

Result<void> HalLibrary::ensureLoaded(const base::TrustedPath& dir, const std::string& dirPath) {
    if (handle_)
        return {};
    // RTLD_NOLOAD: found among the loaded objects by its SONAME, never mapped from a file.
    if (void* loaded = dlopen(CRIU_AMDGPU_HAL_LIBRARY, RTLD_LAZY | RTLD_NOLOAD)) {
        handle_ = loaded;
        return {};
    }
    const std::string shownAs = dirPath + "/" CRIU_AMDGPU_HAL_LIBRARY_IN_BACKEND_DIR;
    auto checked = base::openTrustedPathAt(dir, CRIU_AMDGPU_HAL_LIBRARY_IN_BACKEND_DIR, shownAs,
                                           "HAL library", base::TrustedKind::File);
    if (!checked.ok()) {
        whyNotLoaded_ = checked.error().describe();
        return checked.error();
    }
    handle_ = dlopen(base::uniqueFdLibraryName(*checked).c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!handle_) {
        const char* why = dlerror();
        auto error = makeError(ErrorCode::Loader, "cannot load %s: %s", shownAs.c_str(),
                               why ? why : "unknown error");
        whyNotLoaded_ = error.describe();
        return error;
    }
    whyNotLoaded_.clear();
    return {};
}

} // namespace hal
