#include "kernel_report.h"

#include "kfd/kfd_criu.h"
#include "kfd/real_kernel.h"

#include <fcntl.h>

#include <cstring>

namespace tools {

namespace {

constexpr const char* kKfdHandles = "the kernel's CRIU RESTORE (AMDKFD_IOC_CRIU_OP)";

GpuPlan planOf(const KfdFacts& kfd, drm::RenderNodeCaps caps, const std::string& chosen) {
    GpuPlan plan;
    if (chosen == "kfd" && kfd.criuOp()) {
        plan.dump = {"kfd", kKfdHandles};
        plan.restore = {"kfd", kKfdHandles};
    } else if (chosen == "amdgpu-drm") {
        plan.dump = caps.canDump()
                        ? PathChoice{"amdgpu-drm", "GEM_LIST_HANDLES, GET_MAPPING_INFO"}
                        : PathChoice{"none", "needs GEM_LIST_HANDLES and GET_MAPPING_INFO "
                                             "(Linux 6.18+)"};
        plan.restore = caps.canRestore() ? PathChoice{"amdgpu-drm", drm::kRestoreHandleMethod}
                                         : PathChoice{"none", caps.error};
    } else {
        std::string why = chosen.empty() ? "no backend would be chosen"
                                         : "the chosen backend (" + chosen + ") serves no GPU";
        plan.dump = {"none", why};
        plan.restore = {"none", why};
    }
    plan.caps = std::move(caps);
    return plan;
}

tools::Json choiceJson(const PathChoice& c) {
    tools::Json out;
    out["backend"] = c.backend;
    out["handles"] = c.handles;
    return out;
}

const char* yesNo(bool b) {
    return b ? "yes" : "no";
}

} // namespace

KernelReport planKernelReport(KfdFacts kfd, std::vector<drm::RenderNodeCaps> caps,
                              const std::string& chosen) {
    KernelReport report;
    for (drm::RenderNodeCaps& node : caps)
        report.gpus.push_back(planOf(kfd, std::move(node), chosen));
    report.kfd = std::move(kfd);
    return report;
}

tools::Json kernelReportJson(const KernelReport& report) {
    tools::Json out;
    tools::Json& kfd = out["kfd"];
    kfd["path"] = report.kfd.path;
    kfd["present"] = report.kfd.present;
    if (!report.kfd.present) {
        kfd["reason"] = report.kfd.reason;
    } else {
        kfd["ioctl_version"] =
            std::to_string(report.kfd.major) + "." + std::to_string(report.kfd.minor);
        kfd["criu_op"] = report.kfd.criuOp();
    }
    out["gpus"] = tools::Json::array();
    for (const GpuPlan& gpu : report.gpus) {
        tools::Json g;
        g["render_node"] = gpu.caps.path;
        if (!gpu.caps.error.empty()) {
            g["error"] = gpu.caps.error;
        } else {
            g["list_handles"] = gpu.caps.listHandles;
            g["get_mapping_info"] = gpu.caps.mappingInfo;
            g["change_handle"] = drm::changeHandleStateName(gpu.caps.changeHandle);
        }
        g["dump"] = choiceJson(gpu.dump);
        g["restore"] = choiceJson(gpu.restore);
        out["gpus"].push_back(std::move(g));
    }
    return out;
}

std::vector<std::string> kernelReportText(const KernelReport& report) {
    std::vector<std::string> out{"kernel:"};
    const KfdFacts& kfd = report.kfd;
    out.push_back(kfd.present
                      ? base::strFormat("  %s: KFD ioctl %u.%u, CRIU op %s", kfd.path.c_str(),
                                        kfd.major, kfd.minor, yesNo(kfd.criuOp()))
                      : base::strFormat("  %s: %s", kfd.path.c_str(), kfd.reason.c_str()));
    if (report.gpus.empty())
        out.push_back("  no amdgpu render node");
    for (const GpuPlan& gpu : report.gpus) {
        const drm::RenderNodeCaps& c = gpu.caps;
        out.push_back(c.error.empty()
                          ? base::strFormat("  %s: GEM_LIST_HANDLES %s, GET_MAPPING_INFO %s, "
                                            "GEM_CHANGE_HANDLE %s",
                                            c.path.c_str(), yesNo(c.listHandles),
                                            yesNo(c.mappingInfo),
                                            drm::changeHandleStateName(c.changeHandle))
                          : base::strFormat("  %s: %s", c.path.c_str(), c.error.c_str()));
        out.push_back(base::strFormat("    dump: %s (%s)", gpu.dump.backend.c_str(),
                                      gpu.dump.handles.c_str()));
        out.push_back(base::strFormat("    restore: %s, handles by %s", gpu.restore.backend.c_str(),
                                      gpu.restore.handles.c_str()));
    }
    return out;
}

KernelReport probeKernel(const std::string& devRoot, const drm::Paths& paths,
                         const std::string& chosen) {
    KfdFacts facts;
    facts.path = (devRoot.empty() ? std::string("/dev") : devRoot) + "/kfd";
    auto kfdKernel = kfd::makeRealKernel();
    int fd = kfdKernel->open(facts.path, O_RDWR);
    if (fd < 0) {
        facts.reason = base::strFormat("cannot open it: %s", strerror(-fd));
    } else {
        kfd::KernelFd guard(kfdKernel.get(), fd);
        auto version = kfd::kfdGetVersion(*kfdKernel, fd);
        if (version.ok()) {
            facts.present = true;
            std::tie(facts.major, facts.minor) = version.value();
        } else {
            facts.reason = version.error().describe();
        }
    }
    auto drmKernel = drm::makeRealKernel();
    return planKernelReport(std::move(facts), drm::probeRenderNodeCaps(*drmKernel, paths), chosen);
}

} // namespace tools
