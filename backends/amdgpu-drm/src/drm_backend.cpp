#include "drm_backend.h"

#include "drm_calls.h"
#include "drm_device.h"
#include "render_nodes.h"
#include "render_topology.h"

#include <cstring>

namespace drm {

const char* DrmBackend::name() const {
    return kBackendName;
}

Paths DrmBackend::pathsFor(const settings::Settings& settings) const {
    Paths paths = Paths::fromSettings(settings);
    if (hook_)
        hook_(paths);
    return paths;
}

base::Result<void> DrmBackend::haveKernel(const settings::Settings& settings) {
    if (kernel_)
        return base::success();
    HAL_TRY_ASSIGN(kernel_, kernelFor_(settings));
    return base::success();
}

hal::ProbeAnswer DrmBackend::probe(const settings::Settings& settings) {
    if (auto made = haveKernel(settings); !made.ok())
        return hal::ProbeAnswer::notPresent(made.error().describe());
    Paths paths = pathsFor(settings);
    std::vector<unsigned> minors = listRenderMinors(kernel_->files(), paths);
    if (minors.empty())
        return hal::ProbeAnswer::notPresent("no render node under " + paths.devRoot + "/dri");
    DrmCalls calls(*kernel_);
    std::string why = "no amdgpu render node under " + paths.devRoot + "/dri";
    for (unsigned minor : minors) {
        std::string path = paths.renderNodePath(minor);
        int fd = kernel_->open(path);
        if (fd < 0) {
            why = path + ": " + strerror(-fd);
            continue;
        }
        if (!isAmdgpuNode(readRenderNodeSysfs(kernel_->files(), paths, minor), calls, fd)) {
            kernel_->close(fd);
            continue;
        }
        auto listed = calls.listHandles(fd);
        kernel_->close(fd);
        if (!listed.ok()) {
            why = listed.error().code() == base::ErrorCode::NotSupported
                      ? "the kernel lacks GEM_LIST_HANDLES (Linux 6.18+)"
                      : path + ": " + listed.error().describe();
            continue;
        }
        hal::ProbeAnswer answer;
        answer.present = true;
        answer.priority = kBackendPriority;
        answer.capabilities = {hal::capability::kDump, hal::capability::kRestore,
                               hal::capability::kRenderNodeBos};
        answer.reason = "amdgpu render node " + path + " answers GEM_LIST_HANDLES";
        return answer;
    }
    return hal::ProbeAnswer::notPresent(why);
}

base::Result<std::unique_ptr<hal::Device>> DrmBackend::createDevice(const hal::DeviceEnv& env) {
    if (!env.settings)
        return base::makeError(base::ErrorCode::InvalidArgument, "%s: no settings", kBackendName);
    HAL_TRY(haveKernel(*env.settings));
    return std::unique_ptr<hal::Device>(
        std::make_unique<DrmDevice>(env, kernel_, pathsFor(*env.settings)));
}

} // namespace drm
