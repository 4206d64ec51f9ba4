#include "mockgpu/device_nodes.h"

#include "mockgpu/files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

namespace mock {
namespace {

bool isMockNode(const std::string& path, dev_t rdev) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == rdev;
}

base::Result<void> makeNode(const std::string& path, dev_t rdev) {
    if (mknod(path.c_str(), S_IFCHR | 0666, rdev) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno,
                                    "mock init: cannot create device "
                                    "node %s",
                                    path.c_str());
    return base::success();
}

} // namespace

std::string machineDevDir(const std::string& root) {
    return root + "/dev";
}

base::Result<void> makeDeviceNodes(const std::string& root, const topology::Topology& topo,
                                   dev_t rdev) {
    std::string dev = machineDevDir(root);
    removeTree(dev);
    HAL_TRY(makeDirs(dev + "/dri"));
    HAL_TRY(makeNode(dev + "/kfd", rdev));
    for (const topology::Node* gpu : topo.gpus())
        if (gpu->renderMinor() >= 0)
            HAL_TRY(makeNode(topology::renderNodePathIn(dev, gpu->renderMinor()),
                             topology::renderNodeRdev(gpu->renderMinor())));
    return base::success();
}

std::vector<const topology::Node*> visibleGpus(topology::DeviceNodeCalls& calls,
                                               const topology::Topology& topo,
                                               const std::string& devDir, dev_t rdev,
                                               topology::AbsentNode absent,
                                               std::vector<std::string>* why) {
    std::vector<const topology::Node*> out;
    if (!isMockNode(devDir + "/kfd", rdev)) {
        if (why)
            why->push_back(devDir + "/kfd is not the mock's device node");
        return out;
    }
    // Nothing answers behind the mock's render nodes: an open the kernel allows fails ENXIO.
    return topology::gpusAllowedToOpen(calls, topo, devDir, absent, true, why);
}

std::string describeDeviceView(const std::string& devDir) {
    std::vector<std::string> held;
    std::error_code ec;
    if (std::filesystem::exists(devDir + "/kfd", ec))
        held.push_back("kfd");
    std::vector<std::string> render;
    for (const auto& entry : std::filesystem::directory_iterator(devDir + "/dri", ec)) {
        std::string name = entry.path().filename().string();
        if (name.rfind("renderD", 0) == 0)
            render.push_back("dri/" + name);
    }
    std::sort(render.begin(), render.end());
    held.insert(held.end(), render.begin(), render.end());
    if (held.empty())
        return devDir + " holds no kfd and no dri/renderD* node";
    std::string out = devDir + " holds ";
    for (size_t i = 0; i < held.size(); ++i)
        out += (i ? ", " : "") + held[i];
    if (held.front() != "kfd")
        out += " (no kfd)";
    return out;
}

} // namespace mock
