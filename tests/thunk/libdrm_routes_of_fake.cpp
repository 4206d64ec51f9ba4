// Where the libdrm_amdgpu routes (../kfd/libdrm_amdgpu_routes.h) go in the thunk tests: to the
// installed fake kernel's libdrm, for the render nodes of that kernel (fds from kFakeFdBase).
#include "fake_routes.h"
#include "libdrm_amdgpu_routes.h"

#include <drm.h>

#include <cerrno>
#include <cstring>

namespace kfdinterpose {

int libdrmServingFd(int fd, sdma::Libdrm** drm, int* deviceFd) {
    using thunkfake::kernel;
    *drm = nullptr;
    *deviceFd = fd;
    if (fd < thunkfake::kFakeFdBase || !kernel())
        return 0;
    // amdgpu_device_initialize: DRM_IOCTL_VERSION must name amdgpu (3.x).
    char name[16] = {};
    drm_version v{};
    v.name = name;
    v.name_len = sizeof(name) - 1;
    if (kernel()->ioctl(fd, DRM_IOCTL_VERSION, &v) != 0 || strcmp(name, "amdgpu") != 0)
        return -EBADF;
    *drm = &kernel()->libdrm();
    return 0;
}

sdma::Libdrm* libdrmOfHandles() {
    return thunkfake::kernel() ? &thunkfake::kernel()->libdrm() : nullptr;
}

const char* fakeMarketingName() {
    return "Fake AMD GPU";
}

} // namespace kfdinterpose
