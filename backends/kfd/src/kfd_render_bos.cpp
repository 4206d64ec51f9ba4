// KfdDevice, dump side: the BOs a ROCm process made on its render nodes itself, which this
// backend does not checkpoint, refused before anything is paused.
#include "kfd/kfd_device.h"

#include "base/log.h"
#include "gem/list_handles.h"

#include <sys/sysmacros.h>

namespace kfd {
namespace {

/// How many BOs of one file an error names before it counts the rest.
constexpr size_t kNamedBos = 8;

/// "handle 1 (65536 bytes, domains 0x4, flags 0x...), ..." of the BOs of one file.
std::string namedBos(const std::vector<gem::GemListHandlesEntry>& bos) {
    std::string out;
    for (size_t i = 0; i < bos.size() && i < kNamedBos; ++i) {
        const gem::GemListHandlesEntry& bo = bos[i];
        out +=
            base::strFormat("%shandle %u (%llu bytes, domains 0x%llx, flags 0x%llx%s)",
                            i ? ", " : "", bo.gemHandle, static_cast<unsigned long long>(bo.size),
                            static_cast<unsigned long long>(bo.preferredDomains),
                            static_cast<unsigned long long>(bo.allocFlags),
                            bo.flags & gem::kListHandlesIsImport ? ", imported" : "");
    }
    if (bos.size() > kNamedBos)
        out += base::strFormat(" and %zu more", bos.size() - kNamedBos);
    return out;
}

} // namespace

base::Result<void> KfdDevice::refuseOwnRenderBos(int pid) {
    std::vector<ProcFd> fds;
    if (int r = kernel_->listProcessFds(pid, &fds); r < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -r,
                                    "kfd: cannot list the files of process %d (/proc/%d/fd)", pid,
                                    pid);
    std::string found;
    for (const ProcFd& f : fds) {
        unsigned maj = major(f.st.st_rdev), min = minor(f.st.st_rdev);
        if (!S_ISCHR(f.st.st_mode) || maj != kDrmMajor || min < kFirstRenderMinor)
            continue;
        std::string path = renderPath(static_cast<int>(min));
        int copy = kernel_->pidGetFd(pid, f.fd);
        if (copy < 0)
            return base::makeErrnoError(base::ErrorCode::Kernel, -copy,
                                        "kfd: cannot get fd %d (%s) of process %d (pidfd_getfd) "
                                        "to list the BOs it holds there",
                                        f.fd, path.c_str(), pid);
        KernelFd guard(kernel_.get(), copy);
        HAL_TRY_ASSIGN(bool amdgpu, isOurDevice(copy));
        if (!amdgpu)
            continue;
        auto bos = gem::listHandles([this, copy](unsigned long request, void* arg) {
            return kernel_->ioctl(copy, request, arg);
        });
        if (!bos.ok() && bos.error().code() == base::ErrorCode::NotSupported) {
            HAL_LOG_WARN("kfd: process %d fd %d (%s): the kernel lacks GEM_LIST_HANDLES (Linux "
                         "6.18+), so BOs the process made on the render node itself (Mesa, "
                         "libdrm) cannot be seen; any there are not checkpointed",
                         pid, f.fd, path.c_str());
            continue;
        }
        if (!bos.ok())
            return std::move(bos.error().addContext(
                base::strFormat("kfd: while listing the BOs process %d holds on fd %d (%s)", pid,
                                f.fd, path.c_str())));
        if (bos.value().empty())
            continue;
        found += base::strFormat("%sfd %d (%s): %zu BOs: %s", found.empty() ? "" : "; ", f.fd,
                                 path.c_str(), bos.value().size(), namedBos(bos.value()).c_str());
    }
    if (found.empty())
        return base::success();
    return base::makeError(
        base::ErrorCode::NotSupported,
        "kfd: process %d holds BOs of its own on render nodes, made or imported through the "
        "render node itself (Mesa or libdrm beside ROCm), which the kfd backend does not "
        "checkpoint (it saves what KFD allocated): %s. Nothing was paused; the process runs on",
        pid, found.c_str());
}

} // namespace kfd
