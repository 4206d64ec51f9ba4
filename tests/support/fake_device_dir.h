#pragma once
/// \file
/// The /dev of a fake machine as its devices cgroup answers for it, shared by the kfd and drm
/// fakes: render nodes the cgroup refuses (opening any node of the number fails EPERM), render
/// nodes absent from /dev, and the nodes made there by mknod (a restore makes the new pod's).
/// FakeDeviceNodeCalls is the topology::DeviceNodeCalls a fake kernel hands out: stat, open and
/// close go to that kernel, mknod and unlink to the FakeDeviceDir.

#include "topology/render_node_access.h"

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace testsupport {

class FakeDeviceDir {
public:
    /// `renderMinorOfName`: the render minor a path of /dev names ("…/renderD130" -> 130), or -1.
    explicit FakeDeviceDir(std::function<int(const std::string&)> renderMinorOfName)
        : minorOfName_(std::move(renderMinorOfName)) {}

    /// The devices cgroup refuses render `minor`.
    void deny(int minor);
    bool denied(int minor) const;
    /// /dev lacks the node of render `minor` until one is made.
    void remove(int minor);
    /// The render minor of the node at `path`: a node made there, else the node its name names
    /// unless that one was removed; -1 when there is none.
    int minorOf(const std::string& path) const;
    /// mknod of a render node (major 226) at `path`: 0, -EEXIST or -EINVAL.
    int make(const std::string& path, dev_t rdev);
    /// unlink of a node made at `path`: 0 or -ENOENT.
    int unlink(const std::string& path);
    /// The nodes made and still there, by path.
    std::map<std::string, int> made() const;

private:
    std::function<int(const std::string&)> minorOfName_;
    mutable std::mutex mu_;
    std::set<int> denied_, removed_;
    std::map<std::string, int> made_;
};

class FakeDeviceNodeCalls final : public topology::DeviceNodeCalls {
public:
    struct Kernel {
        std::function<int(const std::string&, struct stat*)> stat;
        std::function<int(const std::string&)> open;
        std::function<void(int)> close;
    };
    FakeDeviceNodeCalls(Kernel kernel, FakeDeviceDir& dir) : k_(std::move(kernel)), dir_(dir) {}

    int statPath(const std::string& path, struct stat* st) override { return k_.stat(path, st); }
    int openNode(const std::string& path) override { return k_.open(path); }
    void closeNode(int fd) override { k_.close(fd); }
    int makeCharNode(const std::string& path, mode_t, dev_t rdev, uid_t, gid_t) override {
        return dir_.make(path, rdev);
    }
    int unlinkPath(const std::string& path) override { return dir_.unlink(path); }
    int makeDir(const std::string&, mode_t) override { return 0; }

private:
    Kernel k_;
    FakeDeviceDir& dir_;
};

} // namespace testsupport
