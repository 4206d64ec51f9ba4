// The library's entry point: the backend with the real kernel calls (or, with the test option
// kfd-driver, a user-space KFD driver's render nodes: driver_kernel.h).
#include "drm_backend.h"
#include "drm_device.h"
#ifdef CRIU_AMDGPU_DRM_ON_KFD_DRIVER
#include "driver_kernel.h"
#endif

namespace drm {
namespace {

class RealDrmBackend final : public DrmBackend {
public:
    RealDrmBackend()
        : DrmBackend([](const settings::Settings& settings)
                         -> base::Result<std::shared_ptr<KernelInterface>> {
#ifdef CRIU_AMDGPU_DRM_ON_KFD_DRIVER
              return kernelFor(settings);
#else
              (void)settings; // the option kfd-driver needs the kfd backend's client of the driver
              return makeRealKernel();
#endif
          }) {
    }
};

} // namespace
} // namespace drm

CRIU_AMDGPU_DEFINE_BACKEND(drm::RealDrmBackend, drm::kBackendName)
