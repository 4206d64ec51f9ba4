#pragma once
/// \file
/// Finding a process's render-node fds and telling open files apart through procfs: the fd
/// links of `/proc/<pid>/fd` and the `drm-client-id` of `/proc/<pid>/fdinfo` (one id per open
/// DRM file, shared by every fd of that open file in every process).

#include "amdgpu-drm/paths.h"

#include <optional>
#include <string>
#include <vector>

namespace drm {

/// One render-node fd of a process.
struct ProcRenderFd {
    int pid = 0;
    int fd = -1;
    unsigned minor = 0;
    std::string path;     ///< the fd's link target
    std::string clientId; ///< drm-client-id from fdinfo, "" when the kernel does not show it
};

/// The render-node fds of `pid` in fd order (empty when it has none or cannot be read).
std::vector<ProcRenderFd> renderFdsOfPid(const Paths& paths, int pid);

/// The drm-client-id of `<procRoot>/<who>/fdinfo/<fd>` (who = a pid or "self"), or "".
std::string drmClientId(const Paths& paths, const std::string& who, int fd);

/// Numeric entries of procRoot, ascending, without the pid `self` points at.
std::vector<int> listPids(const Paths& paths);

} // namespace drm
