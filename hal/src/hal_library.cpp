#include "hal_library.h"

#include "library_name.h"

#include <dlfcn.h>

namespace hal {

using base::ErrorCode;
using base::makeError;
using base::Result;

Result<void> HalLibrary::ensureLoaded(const base::TrustedPath& dir, const std::string& dirPath) {
    if (library_.isOpen())
        return {};
    // RTLD_NOLOAD: found among the loaded objects by its SONAME, never mapped from a file.
    if (void* loaded = dlopen(CRIU_AMDGPU_HAL_LIBRARY, RTLD_LAZY | RTLD_NOLOAD)) {
        library_.adopt(loaded);
        return {};
    }
    const std::string shownAs = dirPath + "/" CRIU_AMDGPU_HAL_LIBRARY_IN_BACKEND_DIR;
    auto checked = base::openTrustedPathAt(dir, CRIU_AMDGPU_HAL_LIBRARY_IN_BACKEND_DIR, shownAs,
                                           "HAL library", base::TrustedKind::File);
    if (!checked.ok()) {
        whyNotLoaded_ = checked.error().describe();
        return checked.error();
    }
    std::string why;
    if (!library_.open(uniqueFdLibraryName(*checked), &why)) {
        auto error =
            makeError(ErrorCode::Loader, "cannot load %s: %s", shownAs.c_str(), why.c_str());
        whyNotLoaded_ = error.describe();
        return error;
    }
    whyNotLoaded_.clear();
    return {};
}

} // namespace hal
