#pragma once
/// \file
/// The mock GPU's context state as bytes: protobuf messages of the project's .proto
/// (mock_context_state, mock_render_node_state). The same bytes are the driver's state file and,
/// with the context id, the priv_data of the mock backend's render-node images.

#include "mockgpu/context.h"

#include "base/result.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mock {

/// A context's state as a packed mock_context_state.
std::string encodeState(const ContextState& state);

/// Unpacks encodeState's bytes; an Image error naming `what` when they are not a context state.
base::Result<ContextState> decodeState(const std::string& bytes, const std::string& what);

/// What the mock backend keeps in a render-node image's priv_data.
struct RenderNodeState {
    uint32_t contextId = 0; ///< the driver context the file had at dump
    ContextState state;
};

/// A render-node image's priv_data for `rn` (a packed mock_render_node_state).
std::string encodeRenderNodeState(const RenderNodeState& rn);

/// The mock state in `privData`, or std::nullopt when it holds none (another writer's image:
/// empty, or bytes that are not a mock_render_node_state with a context id and a GPU).
std::optional<RenderNodeState> decodeRenderNodeState(const std::string& privData);

} // namespace mock
