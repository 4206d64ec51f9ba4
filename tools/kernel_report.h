#pragma once
/// \file
/// What this kernel can do for checkpoint/restore, for `criu-amdgpu probe`: KFD and its ioctl
/// version, the KFD CRIU op, and per amdgpu render node GEM_LIST_HANDLES, GEM_OP
/// GET_MAPPING_INFO and GEM_CHANGE_HANDLE (drm::probeRenderNodeCaps), with the backend a dump and
/// a restore of that GPU would use and how the restore gives BOs their handles.

#include "amdgpu-drm/render_caps.h"
#include "json_output.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tools {

/// /dev/kfd as the kernel answers it.
struct KfdFacts {
    std::string path;
    bool present = false;
    std::string reason; ///< why not present
    uint32_t major = 0;
    uint32_t minor = 0;
    /// AMDKFD_IOC_CRIU_OP exists (KFD ioctl 1.7+; asking the op itself would pause a process).
    bool criuOp() const { return present && (major > 1 || (major == 1 && minor >= 7)); }
};

/// The backend and handle method of one operation on one GPU ("none" and why when no backend).
struct PathChoice {
    std::string backend;
    std::string handles;
};

/// What one GPU's dump and restore would use, given the backend the plugin would choose.
struct GpuPlan {
    drm::RenderNodeCaps caps;
    PathChoice dump;
    PathChoice restore;
};

/// The report: KFD, and each amdgpu render node with its plan.
struct KernelReport {
    KfdFacts kfd;
    std::vector<GpuPlan> gpus;
};

/// Plans each render node of `caps` under the backend the plugin would choose (`chosen`, "" when
/// none): kfd serves every GPU through the KFD CRIU op; amdgpu-drm dumps where the node has
/// LIST_HANDLES and GET_MAPPING_INFO and restores everywhere; any other choice serves no GPU.
KernelReport planKernelReport(KfdFacts kfd, std::vector<drm::RenderNodeCaps> caps,
                              const std::string& chosen);

/// The "kernel" object of probe --json, keys in this order:
///   kfd   object: path (string), present (bool), then either reason (string) or
///         ioctl_version (string "MAJOR.MINOR") and criu_op (bool)
///   gpus  array, one object per amdgpu render node: render_node (string), then either error
///         (string) or list_handles (bool), get_mapping_info (bool), change_handle ("usable",
///         "disabled" or "absent"); then dump and restore, each an object: backend (string,
///         "none" when no backend would), handles (string: how handles are given back)
tools::Json kernelReportJson(const KernelReport& report);

/// The text lines of the report (without a trailing newline each).
std::vector<std::string> kernelReportText(const KernelReport& report);

/// Asks the real kernel (`devRoot`: the settings' dev root, "" = /dev; `paths` for render nodes).
KernelReport probeKernel(const std::string& devRoot, const drm::Paths& paths,
                         const std::string& chosen);

} // namespace tools
