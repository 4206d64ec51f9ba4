#pragma once
/// \file
/// Filling criu's plugin descriptor (CR_PLUGIN_DESC) for a given criu ABI. Defined in
/// plugin_entry.cpp, next to the hook entry points it points at; declared here for unit tests.

#include "criu_abi.h"

#include "config/config.h"

#include <functional>

namespace frontend {

/// Fills `desc` for `abi`: name "amdgpu_plugin", init/exit, version 0.2.0, max_hooks =
/// abi.maxHooks, and the plugin's hooks below max_hooks (every slot at or beyond it is NULL).
/// RESTORE_EXT_FILE takes (int id, bool *retry_needed) exactly when abi.retryNeeded.
void fillDescriptor(CriuPluginDesc* desc, const CriuAbi& abi);

/// What the constructor does at dlopen, before criu verifies the descriptor: detects the ABI
/// with `probe` (a forced `criu-abi` from `sources` wins) and fills `desc`. Never throws: on an
/// exception it fills the 3.17 ABI, which every criu accepts. Returns the ABI filled in.
CriuAbi describeSelf(CriuPluginDesc* desc, const std::function<CriuProbe()>& probe,
                     const config::Sources& sources) noexcept;

} // namespace frontend
