// Probing render nodes by opening them (the device cgroup answers), and making the one a
// restored /dev lacks.
#include "topology/render_node_access.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace topology {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;

namespace {

/// An O_PATH fd of the directory holding `path`, whose last component is not followed: a
/// directory of the restored /dev (its `dri`) that is a symbolic link is refused (ENOTDIR),
/// so nothing is made where the link leads. Returns the fd or -errno; `name` gets the last
/// component of `path`.
int parentOf(const std::string& path, std::string* name) {
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    *name = slash == std::string::npos ? path : path.substr(slash + 1);
    int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

/// Runs `call(dirFd, name)` in the directory holding `path` (parentOf); its 0 or -errno.
template <class Call> int inParentOf(const std::string& path, Call call) {
    std::string name;
    int dir = parentOf(path, &name);
    if (dir < 0)
        return dir;
    int rc = call(dir, name.c_str());
    ::close(dir);
    return rc;
}

class SystemCalls final : public DeviceNodeCalls {
public:
    int statPath(const std::string& path, struct stat* st) override {
        return ::fstatat(AT_FDCWD, path.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
    }
    int openNode(const std::string& path) override {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }
    void closeNode(int fd) override { ::close(fd); }
    int makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                     gid_t gid) override {
        return inParentOf(path, [&](int dir, const char* name) {
            if (::mknodat(dir, name, S_IFCHR | (mode & 07777), rdev) != 0)
                return -errno;
            // mknod's mode went through the umask; the owner and mode are those asked, set on
            // the node just made, never through a link.
            if (::fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
                ::fchmodat(dir, name, mode & 07777, 0) != 0) {
                int e = errno;
                ::unlinkat(dir, name, 0);
                return -e;
            }
            return 0;
        });
    }
    int unlinkPath(const std::string& path) override {
        return inParentOf(path, [](int dir, const char* name) {
            return ::unlinkat(dir, name, 0) == 0 ? 0 : -errno;
        });
    }
    int makeDir(const std::string& path, mode_t mode) override {
        return inParentOf(path, [mode](int dir, const char* name) {
            return ::mkdirat(dir, name, mode) == 0 || errno == EEXIST ? 0 : -errno;
        });
    }
};

std::string nodeName(int minor) {
    return "renderD" + std::to_string(minor);
}

bool isRenderNode(const struct stat& st, int minor) {
    return S_ISCHR(st.st_mode) && st.st_rdev == renderNodeRdev(minor);
}

/// Opens `path` and says what the kernel answered.
NodeAccess tryOpen(DeviceNodeCalls& calls, const std::string& path, int* err) {
    int fd = calls.openNode(path);
    if (fd >= 0) {
        calls.closeNode(fd);
        *err = 0;
        return NodeAccess::Opens;
    }
    *err = -fd;
    if (*err == EPERM || *err == EACCES)
        return NodeAccess::Denied;
    if (*err == ENXIO || *err == ENODEV)
        return NodeAccess::NoDriver;
    return NodeAccess::Other;
}

std::string answerText(NodeAccess access, int err) {
    switch (access) {
    case NodeAccess::Opens:
        return "opened";
    case NodeAccess::NoDriver:
        return strFormat("allowed, no driver (%s)", strerror(err));
    case NodeAccess::Denied:
        return strFormat("refused: %s (the device cgroup does not give it)", strerror(err));
    default:
        return strFormat("failed: %s", strerror(err));
    }
}

} // namespace

DeviceNodeCalls& systemDeviceNodeCalls() {
    static SystemCalls calls;
    return calls;
}

std::string renderNodePathIn(const std::string& devDir, int minor) {
    return devDir + "/dri/" + nodeName(minor);
}

dev_t renderNodeRdev(int minor) {
    return makedev(kDrmCharMajor, static_cast<unsigned>(minor));
}

bool probeAllows(const NodeProbe& probe, bool noDriverIsAllowed) {
    return probe.access == NodeAccess::Opens ||
           (noDriverIsAllowed && probe.access == NodeAccess::NoDriver);
}

NodeProbe probeRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor,
                          AbsentNode absent) {
    NodeProbe probe;
    std::string path = renderNodePathIn(devDir, minor);
    struct stat st;
    int rc = calls.statPath(path, &st);
    if (rc == 0) {
        probe.present = true;
        if (!isRenderNode(st, minor)) {
            probe.detail = strFormat("%s is not the character device %u:%d", path.c_str(),
                                     kDrmCharMajor, minor);
            return probe;
        }
        probe.access = tryOpen(calls, path, &probe.err);
        probe.detail = path + (probe.access == NodeAccess::Opens ? ": " : ": open ") +
                       answerText(probe.access, probe.err);
        return probe;
    }
    if (rc != -ENOENT) {
        probe.err = -rc;
        probe.detail = strFormat("%s: lstat failed: %s", path.c_str(), strerror(-rc));
        return probe;
    }
    if (absent == AbsentNode::Report) {
        probe.access = NodeAccess::Missing;
        probe.err = ENOENT;
        probe.detail = path + " absent";
        return probe;
    }
    // Absent: would this process be allowed the GPU if its node were there?
    std::string temp = strFormat("%s/.criu-amdgpu-probe-%s-%d", devDir.c_str(),
                                 nodeName(minor).c_str(), static_cast<int>(getpid()));
    (void)calls.unlinkPath(temp); // a probe node left by a process of the same pid
    rc = calls.makeCharNode(temp, 0600, renderNodeRdev(minor), 0, 0);
    if (rc != 0) {
        probe.access = NodeAccess::Missing;
        probe.err = -rc;
        probe.detail = strFormat("%s absent, and no node of %u:%d can be made in %s (%s)",
                                 path.c_str(), kDrmCharMajor, minor, devDir.c_str(), strerror(-rc));
        return probe;
    }
    probe.access = tryOpen(calls, temp, &probe.err);
    (void)calls.unlinkPath(temp);
    probe.detail = strFormat("%s absent; a node of %u:%d %s", path.c_str(), kDrmCharMajor, minor,
                             answerText(probe.access, probe.err).c_str());
    return probe;
}

std::vector<const Node*> gpusAllowedToOpen(DeviceNodeCalls& calls, const Topology& topo,
                                           const std::string& devDir, AbsentNode absent,
                                           bool noDriverIsAllowed, std::vector<std::string>* why) {
    std::vector<const Node*> out;
    for (const Node* gpu : topo.gpus()) {
        if (gpu->renderMinor() < 0)
            continue;
        NodeProbe probe = probeRenderNode(calls, devDir, gpu->renderMinor(), absent);
        if (probeAllows(probe, noDriverIsAllowed))
            out.push_back(gpu);
        else if (why)
            why->push_back(
                strFormat("GPU %s: %s", gpuIdHex(gpu->gpuId).c_str(), probe.detail.c_str()));
    }
    return out;
}

Result<bool> ensureRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor) {
    std::string path = renderNodePathIn(devDir, minor);
    struct stat st;
    int rc = calls.statPath(path, &st);
    if (rc == 0) {
        if (!isRenderNode(st, minor))
            return makeError(ErrorCode::Io, "%s is not the character device %u:%d", path.c_str(),
                             kDrmCharMajor, minor);
        return false;
    }
    if (rc != -ENOENT)
        return makeErrnoError(ErrorCode::Io, -rc, "cannot stat %s", path.c_str());
    // The restored /dev comes from the checkpoint: its kfd lends its owner and mode only when
    // it is the character device itself (not a link to some file), and a dri that is a link is
    // refused rather than followed.
    struct stat kfd;
    mode_t mode = 0666;
    uid_t uid = 0;
    gid_t gid = 0;
    if (calls.statPath(devDir + "/kfd", &kfd) == 0 && S_ISCHR(kfd.st_mode)) {
        mode = kfd.st_mode & 07777;
        uid = kfd.st_uid;
        gid = kfd.st_gid;
    }
    struct stat dri;
    if (calls.statPath(devDir + "/dri", &dri) == 0 && !S_ISDIR(dri.st_mode))
        return makeError(ErrorCode::Io,
                         "%s/dri is %s, not a directory: render node %s is not made through it",
                         devDir.c_str(), S_ISLNK(dri.st_mode) ? "a symbolic link" : "a file",
                         nodeName(minor).c_str());
    rc = calls.makeDir(devDir + "/dri", 0755);
    if (rc != 0)
        return makeErrnoError(ErrorCode::Io, -rc, "cannot make %s/dri", devDir.c_str());
    rc = calls.makeCharNode(path, mode, renderNodeRdev(minor), uid, gid);
    if (rc != 0)
        return makeErrnoError(ErrorCode::Io, -rc, "cannot make render node %s (%u:%d)",
                              path.c_str(), kDrmCharMajor, minor);
    return true;
}

} // namespace topology
