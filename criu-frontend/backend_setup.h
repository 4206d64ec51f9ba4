#pragma once
/// \file
/// The backend of one criu run, chosen at init once the settings are loaded: the backends in the
/// plugin's directory are probed and one is chosen by the settings (and, at restore, by what the
/// checkpoint asks); its device goes into the context. When none can serve, the context says
/// why: inert (nothing asked for, no GPU here) or a set-up error (what was asked for cannot be
/// had), which fails only the checkpoints that involve an AMD GPU.

#include "session_context.h"

#include "config/config.h"
#include "hal/registry.h"

#include <memory>
#include <string>
#include <vector>

namespace frontend {

/// The mock roots the sources name in the environment or in plugin options, read without loading
/// the configuration (which may be what failed).
std::vector<std::string> mockRootsNamedBy(const config::Sources& sources);

/// Discovers the backends into `registry`, chooses one and starts its device in `ctx`; when
/// criu's inventory is known (`inventoryKnown`), an inert restore says the checkpoint used AMD
/// GPUs.
void setUpBackend(SessionContext& ctx, std::unique_ptr<hal::BackendRegistry>& registry,
                  const config::LoadedConfig& loaded, bool inventoryKnown);

} // namespace frontend
