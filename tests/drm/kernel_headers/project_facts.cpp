// The facts of uapi_facts.inc as the project sees them: backends/amdgpu-drm/src/uapi.h, libdrm's
// amdgpu_drm.h and drm.h, the KFD backend's <linux/kfd_ioctl.h> and <linux/sync_file.h> (the build
// machine's).
#include "facts.h"

#include "kfd/kfd_uapi.h"
#include "uapi.h"

#include <fcntl.h> // O_RDWR, O_CLOEXEC of DRM_RDWR, DRM_CLOEXEC
#include <linux/sync_file.h>

#include <cstddef>

namespace uapifacts {

Facts projectFacts() {
    Facts f;
#include "fact_macros.h"
#define OWN_SIZE(kernelType, ownType) f[#kernelType ".sizeof"] = sizeof(ownType);
#define OWN_FIELD(kernelType, kernelMember, ownType, ownMember)                                    \
    f[#kernelType "." #kernelMember] = offsetof(ownType, ownMember);
#define OWN_VALUE(kernelName, ownExpr) f[#kernelName] = static_cast<uint64_t>(ownExpr);
#include "uapi_facts.inc"
    return f;
}

} // namespace uapifacts
