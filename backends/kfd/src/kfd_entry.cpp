// The entry point of kfd.so: the backend over the real kernel (or, with the test option
// kfd-driver, a user-space KFD driver's).
#include "kfd/driver_kernel.h"
#include "kfd/kfd_backend.h"
#include "kfd/real_kernel.h"

namespace {

class RealKfdBackend final : public kfd::KfdBackend {
public:
    RealKfdBackend()
        : KfdBackend([](const settings::Settings& settings) {
              return kfd::kernelFor(settings, [] { return kfd::makeRealKernel(); });
          }) {}
};

} // namespace

CRIU_AMDGPU_DEFINE_BACKEND(RealKfdBackend, "kfd")
