// The library's entry point: the backend with the real kernel calls.
#include "drm_backend.h"
#include "drm_device.h"

namespace drm {
namespace {

class RealDrmBackend final : public DrmBackend {
public:
    RealDrmBackend() : DrmBackend(makeRealKernel()) {}
};

} // namespace
} // namespace drm

CRIU_AMDGPU_DEFINE_BACKEND(drm::RealDrmBackend, drm::kBackendName)
