#pragma once
/// \file
/// What the kernel's render-node interface offers on each amdgpu render node, found on a DRM
/// file of our own (no process's file is touched): GEM_LIST_HANDLES, GEM_OP GET_MAPPING_INFO
/// and whether GEM_CHANGE_HANDLE runs (a change of a BO's handle to itself: no side effect),
/// both asked on a one-page BO made and closed for the questions. For `criu-amdgpu probe`; the
/// plugin's own probe asks only LIST_HANDLES.

#include "amdgpu-drm/kernel_interface.h"
#include "amdgpu-drm/paths.h"

#include <string>
#include <vector>

namespace drm {

/// GEM_CHANGE_HANDLE on this kernel.
enum class ChangeHandleState {
    Runs,     ///< 6.18.0 to 6.18.35
    Disabled, ///< answers EINVAL on a kernel with LIST_HANDLES: 6.18.36+, 7.0.13+, 7.1+
    Absent,   ///< answers EINVAL on a kernel without LIST_HANDLES: before 6.18
};

/// "usable", "disabled" or "absent".
const char* changeHandleStateName(ChangeHandleState state);

/// How the restore gives BOs their checkpointed handles (the same on every kernel).
inline constexpr const char* kRestoreHandleMethod =
    "lowest-free-handle order with placeholders (no GEM_CHANGE_HANDLE)";

/// One amdgpu render node.
struct RenderNodeCaps {
    unsigned minor = 0;
    std::string path;
    std::string error; ///< not empty: the node could not be asked (the other fields are false)
    bool listHandles = false;
    bool mappingInfo = false;
    ChangeHandleState changeHandle = ChangeHandleState::Absent;
    /// Whether this backend can dump (LIST_HANDLES and GET_MAPPING_INFO) and restore here.
    bool canDump() const { return error.empty() && listHandles && mappingInfo; }
    bool canRestore() const { return error.empty(); }
};

/// Every amdgpu render node under `paths` and what its kernel offers, ascending by minor.
std::vector<RenderNodeCaps> probeRenderNodeCaps(KernelInterface& kernel, const Paths& paths);

} // namespace drm
