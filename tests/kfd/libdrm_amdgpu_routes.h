#pragma once
/// \file
/// libdrm_amdgpu's entry points served by a fake KFD's libdrm (libdrm_amdgpu_routes.cpp): the
/// in-process thunk tests' fake kernel (../thunk/libc_interposer.cpp) and the user-space driver's
/// preload for criu (driver/criu_preload.cpp). A program that links the routes defines the three
/// functions below, which say where a call goes.

#include "sdma/libdrm.h"

namespace kfdinterpose {

/// The libdrm serving the render node `fd`: 0 with *drm set for a node of the fake (and
/// *deviceFd the fd that libdrm knows the node by), 0 with *drm null for any other fd (the real
/// libdrm_amdgpu serves it), or -errno for a node of the fake that is no amdgpu device.
int libdrmServingFd(int fd, sdma::Libdrm** drm, int* deviceFd);
/// The libdrm serving the handles given out so far (nullptr when the fake is gone).
sdma::Libdrm* libdrmOfHandles();
/// What amdgpu_get_marketing_name says of a device of the fake.
const char* fakeMarketingName();

} // namespace kfdinterpose
