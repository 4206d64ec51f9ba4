#pragma once
/// \file
/// The Libdrm that calls libdrm_amdgpu: the only code of the project that does.

#include "sdma/libdrm.h"

#include <memory>

namespace sdma {

/// The real libdrm_amdgpu: thin wrappers, no decisions.
std::unique_ptr<Libdrm> makeRealLibdrm();

} // namespace sdma
