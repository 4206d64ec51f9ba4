// The entry point of kfd.so: the backend over the real kernel.
#include "kfd/kfd_backend.h"
#include "kfd/real_kernel.h"

namespace {

class RealKfdBackend final : public kfd::KfdBackend {
public:
    RealKfdBackend()
        : KfdBackend([] { return std::shared_ptr<kfd::KernelInterface>(kfd::makeRealKernel()); }) {}
};

} // namespace

CRIU_AMDGPU_DEFINE_BACKEND(RealKfdBackend, "kfd")
