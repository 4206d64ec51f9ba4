// What `criu-amdgpu probe` says a dump and a restore of each GPU would use, from the kernel's
// answers (tools/kernel_report.h); the answers themselves are tested against the fake render
// node in tests/drm (DrmRenderCaps).
#include "kernel_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

tools::KfdFacts kfdOf(uint32_t major, uint32_t minor) {
    tools::KfdFacts k;
    k.path = "/dev/kfd";
    k.present = true;
    k.major = major;
    k.minor = minor;
    return k;
}

tools::KfdFacts noKfd() {
    tools::KfdFacts k;
    k.path = "/dev/kfd";
    k.reason = "cannot open it: No such file or directory";
    return k;
}

drm::RenderNodeCaps node(unsigned minor, bool sixEighteen, drm::ChangeHandleState change) {
    drm::RenderNodeCaps c;
    c.minor = minor;
    c.path = "/dev/dri/renderD" + std::to_string(minor);
    c.listHandles = sixEighteen;
    c.mappingInfo = sixEighteen;
    c.changeHandle = change;
    return c;
}

TEST(KernelReport, TheCriuOpIsThereFromKfdIoctl1_7) {
    EXPECT_FALSE(kfdOf(1, 6).criuOp());
    EXPECT_TRUE(kfdOf(1, 7).criuOp());
    EXPECT_TRUE(kfdOf(1, 23).criuOp());
    EXPECT_FALSE(noKfd().criuOp());
}

TEST(KernelReport, UnderKfdEveryGpuIsDumpedAndRestoredByTheCriuOp) {
    auto report = tools::planKernelReport(
        kfdOf(1, 23), {node(128, true, drm::ChangeHandleState::Disabled)}, "kfd");
    ASSERT_EQ(report.gpus.size(), 1u);
    EXPECT_EQ(report.gpus[0].dump.backend, "kfd");
    EXPECT_EQ(report.gpus[0].restore.backend, "kfd");
    auto json = nlohmann::json::parse(tools::kernelReportJson(report).dump());
    EXPECT_EQ(json["kfd"]["ioctl_version"], "1.23");
    EXPECT_EQ(json["kfd"]["criu_op"], true);
    EXPECT_EQ(json["gpus"][0]["change_handle"], "disabled");
    EXPECT_EQ(json["gpus"][0]["restore"]["handles"],
              "the kernel's CRIU RESTORE (AMDKFD_IOC_CRIU_OP)");
}

TEST(KernelReport, UnderAmdgpuDrmANodeBefore6_18IsRestoredButNotDumped) {
    auto report = tools::planKernelReport(noKfd(),
                                          {node(128, true, drm::ChangeHandleState::Runs),
                                           node(129, false, drm::ChangeHandleState::Absent)},
                                          "amdgpu-drm");
    ASSERT_EQ(report.gpus.size(), 2u);
    EXPECT_EQ(report.gpus[0].dump.backend, "amdgpu-drm");
    EXPECT_EQ(report.gpus[1].dump.backend, "none");
    for (const tools::GpuPlan& gpu : report.gpus) {
        EXPECT_EQ(gpu.restore.backend, "amdgpu-drm");
        EXPECT_EQ(gpu.restore.handles, drm::kRestoreHandleMethod)
            << "the same method where CHANGE_HANDLE runs";
    }
    auto json = nlohmann::json::parse(tools::kernelReportJson(report).dump());
    EXPECT_EQ(json["kfd"]["present"], false);
    EXPECT_EQ(json["kfd"]["reason"], "cannot open it: No such file or directory");
    EXPECT_EQ(json["gpus"][1]["list_handles"], false);
    EXPECT_EQ(json["gpus"][1]["change_handle"], "absent");
    std::vector<std::string> text = tools::kernelReportText(report);
    ASSERT_EQ(text.size(), 8u);
    EXPECT_EQ(text[2], "  /dev/dri/renderD128: GEM_LIST_HANDLES yes, GET_MAPPING_INFO yes, "
                       "GEM_CHANGE_HANDLE usable");
    EXPECT_EQ(text[6],
              "    dump: none (needs GEM_LIST_HANDLES and GET_MAPPING_INFO (Linux 6.18+))");
}

TEST(KernelReport, ANodeThatCouldNotBeAskedIsNeitherDumpedNorRestored) {
    drm::RenderNodeCaps broken = node(128, false, drm::ChangeHandleState::Absent);
    broken.error = "cannot open it: Operation not permitted";
    auto report = tools::planKernelReport(noKfd(), {broken}, "amdgpu-drm");
    EXPECT_EQ(report.gpus[0].restore.backend, "none");
    auto json = nlohmann::json::parse(tools::kernelReportJson(report).dump());
    EXPECT_EQ(json["gpus"][0]["error"], broken.error);
    EXPECT_FALSE(json["gpus"][0].contains("list_handles"));
}

TEST(KernelReport, WithNoBackendChosenNoGpuIsServedAndTheReportSaysWhy) {
    auto report =
        tools::planKernelReport(noKfd(), {node(128, true, drm::ChangeHandleState::Disabled)}, "");
    EXPECT_EQ(report.gpus[0].dump.backend, "none");
    EXPECT_EQ(report.gpus[0].dump.handles, "no backend would be chosen");
    auto mock = tools::planKernelReport(
        noKfd(), {node(128, true, drm::ChangeHandleState::Disabled)}, "mock");
    EXPECT_EQ(mock.gpus[0].restore.handles, "the chosen backend (mock) serves no GPU");
    EXPECT_EQ(tools::kernelReportText(tools::planKernelReport(noKfd(), {}, ""))[2],
              "  no amdgpu render node");
}

} // namespace
