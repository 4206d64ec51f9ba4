#pragma once
/// \file
/// The HAL's shared library (libcriu-amdgpu-hal.so, hal/CMakeLists.txt), which every backend
/// module links and none holds a copy of: loaded before any backend is.
///
/// A backend module names the library in DT_NEEDED and has no search path. Its load is answered
/// by the library already in the process, matched by its SONAME, without the dynamic loader
/// opening any file, so a backend loaded through its checked fd brings no unchecked code with
/// it. In the plugin the library is there before the registry runs (the core links it, and the
/// registry is part of it); in a program that links the HAL statically (the tool, tests) the
/// registry loads it first from the backend directory, through the fd of its own trusted-path
/// check, as it loads a backend.

#include "base/result.h"
#include "base/trusted_path.h"

#include <string>

namespace hal {

/// The library held loaded for a registry's lifetime (a handle of dlopen, or none).
class HalLibrary {
public:
    HalLibrary() = default;
    ~HalLibrary();
    HalLibrary(const HalLibrary&) = delete;
    HalLibrary& operator=(const HalLibrary&) = delete;

    /// Nothing when the process has the library already (this call's, an earlier one's, or the
    /// plugin core's); else loads `<dir>/core/libcriu-amdgpu-hal.so` judged from the trusted
    /// directory `dir` (shown as `dirPath`) and loaded through that judgement's fd. An error says
    /// why it could not be: the backends of `dir` then fail to load, each saying so.
    base::Result<void> ensureLoaded(const base::TrustedPath& dir, const std::string& dirPath);
    /// Why the last ensureLoaded could not load it ("" when it is loaded): for the error of a
    /// backend that then fails to load.
    const std::string& whyNotLoaded() const { return whyNotLoaded_; }

private:
    void* handle_ = nullptr;
    std::string whyNotLoaded_;
};

} // namespace hal
