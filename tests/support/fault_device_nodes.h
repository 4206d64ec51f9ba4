#pragma once
/// \file
/// The probe's device-node calls (topology::DeviceNodeCalls) through a fault sweep's plan.

#include "fault_sweep.h"

#include "topology/render_node_access.h"

namespace faultsweep {

class FaultingDeviceNodes final : public topology::DeviceNodeCalls {
public:
    FaultingDeviceNodes(topology::DeviceNodeCalls& inner, FaultPlan& plan)
        : inner_(inner), plan_(plan) {}
    int statPath(const std::string& path, struct stat* st) override {
        return faultable(plan_, "lstat", [&] { return inner_.statPath(path, st); });
    }
    int openNode(const std::string& path) override {
        return faultable(plan_, "open", [&] { return inner_.openNode(path); });
    }
    void closeNode(int fd) override {
        faultable(plan_, "close", [&] {
            inner_.closeNode(fd);
            return 0;
        });
    }
    int makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                     gid_t gid) override {
        return faultable(plan_, "mknod",
                         [&] { return inner_.makeCharNode(path, mode, rdev, uid, gid); });
    }
    int unlinkPath(const std::string& path) override {
        return faultable(plan_, "unlink", [&] { return inner_.unlinkPath(path); });
    }
    int makeDir(const std::string& path, mode_t mode) override {
        return faultable(plan_, "mkdir", [&] { return inner_.makeDir(path, mode); });
    }

private:
    topology::DeviceNodeCalls& inner_;
    FaultPlan& plan_;
};

} // namespace faultsweep
