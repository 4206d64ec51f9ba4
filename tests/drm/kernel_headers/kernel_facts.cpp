// The facts of uapi_facts.inc as the kernel's own headers give them (compiled with
// CRIU_AMDGPU_KERNEL_HEADERS first on the include path: Debian sid's linux-libc-dev). The
// headers are read into a namespace of their own, so that their structs, which the project's
// headers declare under the same names, are other types than those of project_facts.cpp.
#include "facts.h"

#include <fcntl.h> // O_RDWR, O_CLOEXEC of DRM_RDWR, DRM_CLOEXEC

#include <cstddef>
#include <cstdint>

namespace kernel_uapi {
#include <drm/amdgpu_drm.h>
#include <drm/drm.h>
#include <linux/kfd_ioctl.h>
#include <linux/sync_file.h>

static uapifacts::Facts collect() {
    uapifacts::Facts f;
#include "fact_macros.h"
#define OWN_SIZE(kernelType, ownType) f[#kernelType ".sizeof"] = sizeof(kernelType);
#define OWN_FIELD(kernelType, kernelMember, ownType, ownMember)                                    \
    f[#kernelType "." #kernelMember] = offsetof(kernelType, kernelMember);
#define OWN_VALUE(kernelName, ownExpr) f[#kernelName] = static_cast<uint64_t>(kernelName);
#include "uapi_facts.inc"
    return f;
}

} // namespace kernel_uapi

namespace uapifacts {

Facts kernelFacts() {
    return kernel_uapi::collect();
}

std::pair<uint32_t, uint32_t> kernelKfdVersion() {
    return {KFD_IOCTL_MAJOR_VERSION, KFD_IOCTL_MINOR_VERSION};
}

std::string kernelHeadersVersion() {
    return CRIU_AMDGPU_KERNEL_HEADERS_VERSION;
}

} // namespace uapifacts
