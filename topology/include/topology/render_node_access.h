#pragma once
/// \file
/// Which GPUs a process may use, asked of the kernel rather than read off the files in its /dev.
///
/// A container restored by runc (containerd, podman, Kubernetes) gets its /dev back from the
/// checkpoint: the render nodes of the GPUs the *old* pod was given, not those of the new one. What
/// the new pod was given is in its device cgroup, which runc sets up before criu restores, and
/// which the kernel checks at every open of a device node (and KFD for every GPU). So a render
/// node is probed by opening it: EPERM or EACCES means the GPU is not this process's. A node the
/// restored /dev lacks is probed through a temporary node of the same number, and made for real
/// (with /dev/kfd's owner and mode) once the restore has chosen that GPU: what the runtime would
/// have made for the new pod.

#include "base/result.h"
#include "topology/topology.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace topology {

using base::Result;

/// The system calls a probe makes; each returns 0 (or an fd) or -errno, as the call does. A
/// backend forwards them through its kernel boundary, so its fakes decide what the kernel says.
class DeviceNodeCalls {
public:
    virtual ~DeviceNodeCalls() = default;
    /// lstat(path): a final symbolic link is not followed.
    virtual int statPath(const std::string& path, struct stat* st) = 0;
    /// open(path, O_RDWR | O_CLOEXEC).
    virtual int openNode(const std::string& path) = 0;
    virtual void closeNode(int fd) = 0;
    /// mknod(path, S_IFCHR | mode, rdev), then chown(path, uid, gid) and chmod(path, mode). The
    /// calls of the system make them in the directory holding `path` through its fd (mknodat,
    /// fchownat with AT_SYMLINK_NOFOLLOW), that directory opened without following a link: a
    /// restored /dev comes from the checkpoint, so its `dri` may be a link to anywhere. So do
    /// unlinkPath and makeDir.
    virtual int makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                             gid_t gid) = 0;
    virtual int unlinkPath(const std::string& path) = 0;
    virtual int makeDir(const std::string& path, mode_t mode) = 0;
};

/// The calls as this process makes them.
DeviceNodeCalls& systemDeviceNodeCalls();

inline constexpr unsigned kDrmCharMajor = 226;

/// DIR/dri/renderD<minor>.
std::string renderNodePathIn(const std::string& devDir, int minor);
/// The device number of render node `minor` (226:minor).
dev_t renderNodeRdev(int minor);

/// What the kernel says when this process opens a GPU's render node.
enum class NodeAccess {
    Opens,    ///< it opened: the GPU is this process's
    NoDriver, ///< ENXIO/ENODEV: allowed, but no driver behind the number (no amdgpu here)
    Denied,   ///< EPERM/EACCES: the device cgroup (or the node's mode) refuses it
    Missing,  ///< not in the device directory, and no probe node could be made
    Other,    ///< the path is something else, or another error
};

struct NodeProbe {
    NodeAccess access = NodeAccess::Other;
    bool present = false; ///< the node itself is in the device directory
    int err = 0;          ///< the errno behind Denied, NoDriver, Missing and Other
    /// What was seen, for logs and errors: "renderD152 absent from /dev/dri; a probe node of
    /// 226:152 opened".
    std::string detail;
};

/// What to do about a node the device directory lacks.
enum class AbsentNode {
    Probe,  ///< ask through a temporary node of the same number (a restore, which may make it)
    Report, ///< answer Missing (a process that uses what its /dev holds)
};

/// Probes render node `minor` of device directory `devDir` (opened and closed at once). An absent
/// node is probed through a temporary DIR/.criu-amdgpu-probe-renderD<minor>-<pid>, removed again.
NodeProbe probeRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor,
                          AbsentNode absent = AbsentNode::Probe);

/// Whether a probe's answer lets the process use the GPU: it opened, or (with `noDriverIsAllowed`,
/// the mock, whose render nodes have no driver behind them) the kernel allowed it.
bool probeAllows(const NodeProbe& probe, bool noDriverIsAllowed);

/// The GPUs of `topo` (topology order) whose render node in `devDir` the probe allows
/// (probeAllows with `noDriverIsAllowed`); `why`, when given, gets "GPU 0x1000: DETAIL" for each
/// GPU left out.
std::vector<const Node*> gpusAllowedToOpen(DeviceNodeCalls& calls, const Topology& topo,
                                           const std::string& devDir, AbsentNode absent,
                                           bool noDriverIsAllowed,
                                           std::vector<std::string>* why = nullptr);

/// Makes DIR/dri/renderD<minor> (226:minor, the owner and mode of DIR/kfd when that is a
/// character device, else root 0666) when it is absent; true when it made it. Fails naming the
/// path when it cannot, and when DIR/dri is a symbolic link or not a directory.
Result<bool> ensureRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor);

} // namespace topology
