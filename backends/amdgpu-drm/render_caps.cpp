#include "render_caps.h"

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

/// GET_MAPPING_INFO of a one-page BO made for the question on `fd` (then closed).
hal::Result<bool> mappingInfoAnswers(DrmCalls& calls, int fd) {
    HAL_TRY_ASSIGN(uint32_t handle, calls.gemCreate(fd, 4096, 0, AMDGPU_GEM_DOMAIN_CPU, 0));
    auto info = calls.mappingInfo(fd, handle);
    auto closed = calls.gemClose(fd, handle);
    if (!info.ok() && info.error().code() == hal::ErrorCode::NotSupported)
        return false;
    if (!info.ok())
        return std::move(info).error();
    HAL_TRY(std::move(closed));
    return true;
}

/// The questions of RenderNodeCaps on our own `fd`.
hal::Result<void> ask(DrmCalls& calls, int fd, RenderNodeCaps& caps) {
    auto listed = calls.listHandles(fd);
    if (!listed.ok() && listed.error().code() != hal::ErrorCode::NotSupported)
        return std::move(listed).error();
    caps.listHandles = listed.ok();
    HAL_TRY_ASSIGN(caps.mappingInfo, mappingInfoAnswers(calls, fd));
    HAL_TRY_ASSIGN(bool runs, calls.changeHandleRuns(fd));
    caps.changeHandle = runs               ? ChangeHandleState::Runs
                        : caps.listHandles ? ChangeHandleState::Disabled
                                           : ChangeHandleState::Absent;
    return hal::success();
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
            caps.error = hal::strFormat("cannot open it: %s", strerror(-fd));
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
