// Libraries with the entry point but a broken descriptor: none at all, one without its
// functions, or one whose create function fails.
#include "hal/backend.h"

namespace {

class NeverUsedBackend final : public hal::Backend {
public:
    const char* name() const override { return "test-bad-descriptor"; }
    hal::ProbeAnswer probe(const settings::Settings&) override {
        hal::ProbeAnswer a;
        a.present = true;
        return a;
    }
    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv&) override {
        return base::makeError(base::ErrorCode::NotSupported, "never");
    }
};

} // namespace

extern "C" __attribute__((visibility("default"))) const CriuAmdgpuBackendDescriptor*
criu_amdgpu_backend_entry(void) {
#if defined(TEST_BAD_DESCRIPTOR_NULL)
    return nullptr;
#elif defined(TEST_BAD_DESCRIPTOR_INCOMPLETE)
    static const CriuAmdgpuBackendDescriptor descriptor = {CRIU_AMDGPU_BACKEND_ABI_MAJOR,
                                                           CRIU_AMDGPU_BACKEND_ABI_MINOR,
                                                           "test-incomplete", nullptr, nullptr};
    return &descriptor;
#elif defined(TEST_BAD_DESCRIPTOR_CREATE_FAILS)
    static const CriuAmdgpuBackendDescriptor descriptor = {
        CRIU_AMDGPU_BACKEND_ABI_MAJOR, CRIU_AMDGPU_BACKEND_ABI_MINOR, "test-create-fails",
        [](const hal::HostServices*) -> hal::Backend* { return nullptr; },
        [](hal::Backend* b) { delete b; }};
    return &descriptor;
#else
#error "define one TEST_BAD_DESCRIPTOR_* kind"
#endif
}
