#include "amdgpu-drm/render_caps.h"

#include "drm_calls.h"
#include "render_nodes.h"
#include "render_topology.h"

#include <cstring>

namespace drm {

const char* changeHandleStateName(ChangeHandleState state) {
    switch (state) {
    case ChangeHandleState::Runs:
        return "usable";
    case ChangeHandleState::Disabled:
        return "disabled";
    case ChangeHandleState::Absent:
        break;
    }
    return "absent";
}

namespace {

/// Whether GET_MAPPING_INFO answers on `handle` of `fd`.
base::Result<bool> mappingInfoAnswers(DrmCalls& calls, int fd, uint32_t handle) {
    auto info = calls.mappingInfo(fd, handle);
    if (!info.ok() && info.error().code() == base::ErrorCode::NotSupported)
        return false;
    if (!info.ok())
        return std::move(info).error();
    return true;
}

/// The questions that need a BO, asked on a one-page BO made for them: GET_MAPPING_INFO, and
/// GEM_CHANGE_HANDLE of its handle to itself (the kernels where the ioctl runs look the handle
/// up before anything else, so it must be one the file holds).
base::Result<void> askOnABo(DrmCalls& calls, int fd, RenderNodeCaps& caps) {
    HAL_TRY_ASSIGN(uint32_t handle, calls.gemCreate(fd, 4096, 0, AMDGPU_GEM_DOMAIN_CPU, 0));
    auto mapping = mappingInfoAnswers(calls, fd, handle);
    auto change = mapping.ok() ? calls.changeHandleRuns(fd, handle) : base::Result<bool>(false);
    auto closed = calls.gemClose(fd, handle);
    HAL_TRY_ASSIGN(caps.mappingInfo, std::move(mapping));
    HAL_TRY_ASSIGN(bool runs, std::move(change));
    HAL_TRY(std::move(closed));
    caps.changeHandle = runs               ? ChangeHandleState::Runs
                        : caps.listHandles ? ChangeHandleState::Disabled
                                           : ChangeHandleState::Absent;
    return base::success();
}

/// The questions of RenderNodeCaps on our own `fd`.
base::Result<void> ask(DrmCalls& calls, int fd, RenderNodeCaps& caps) {
    auto listed = calls.listHandles(fd);
    if (!listed.ok() && listed.error().code() != base::ErrorCode::NotSupported)
        return std::move(listed).error();
    caps.listHandles = listed.ok();
    return askOnABo(calls, fd, caps);
}

} // namespace

std::vector<RenderNodeCaps> probeRenderNodeCaps(KernelInterface& kernel, const Paths& paths) {
    std::vector<RenderNodeCaps> out;
    DrmCalls calls(kernel);
    for (unsigned minor : listRenderMinors(kernel.files(), paths)) {
        RenderNodeCaps caps;
        caps.minor = minor;
        caps.path = paths.renderNodePath(minor);
        int fd = kernel.open(caps.path);
        if (fd < 0) {
            caps.error = base::strFormat("cannot open it: %s", strerror(-fd));
            out.push_back(std::move(caps));
            continue;
        }
        if (!isAmdgpuNode(readRenderNodeSysfs(kernel.files(), paths, minor), calls, fd)) {
            kernel.close(fd);
            continue;
        }
        auto asked = ask(calls, fd, caps);
        kernel.close(fd);
        if (!asked.ok()) {
            caps = RenderNodeCaps{minor, caps.path};
            caps.error = asked.error().describe();
        }
        out.push_back(std::move(caps));
    }
    return out;
}

} // namespace drm
