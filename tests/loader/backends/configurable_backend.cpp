// A test backend whose name, presence, priority and ABI version are compile definitions, so the
// same source is built into several libraries.
#include "hal/backend.h"

#ifndef TEST_BACKEND_NAME
#error "TEST_BACKEND_NAME must be defined"
#endif
#ifndef TEST_BACKEND_REASON
#define TEST_BACKEND_REASON ""
#endif

namespace {

class ConfigurableBackend final : public hal::Backend {
public:
    ConfigurableBackend() { HAL_LOG_INFO("test backend %s created", TEST_BACKEND_NAME); }
    ~ConfigurableBackend() override {
        HAL_LOG_INFO("test backend %s destroyed", TEST_BACKEND_NAME);
    }

    const char* name() const override { return TEST_BACKEND_NAME; }

    hal::ProbeAnswer probe(const settings::Settings&) override {
        HAL_LOG_INFO("test backend %s probed", TEST_BACKEND_NAME);
        if (!TEST_BACKEND_PRESENT)
            return hal::ProbeAnswer::notPresent(TEST_BACKEND_REASON);
        hal::ProbeAnswer a;
        a.present = true;
        a.priority = TEST_BACKEND_PRIORITY;
        a.capabilities = {hal::capability::kDump, hal::capability::kRestore};
#ifdef TEST_BACKEND_EXTRA_CAPABILITY
        a.capabilities.push_back(TEST_BACKEND_EXTRA_CAPABILITY);
#endif
        a.reason = TEST_BACKEND_REASON;
        return a;
    }

    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv&) override {
        return base::makeError(base::ErrorCode::NotSupported, "%s has no devices",
                               TEST_BACKEND_NAME);
    }
};

} // namespace

#ifdef TEST_ABI_MAJOR
extern "C" __attribute__((visibility("default"))) const CriuAmdgpuBackendDescriptor*
criu_amdgpu_backend_entry(void) {
    static const CriuAmdgpuBackendDescriptor descriptor = {
        TEST_ABI_MAJOR, TEST_ABI_MINOR, TEST_BACKEND_NAME,
        [](const hal::HostServices* host) -> hal::Backend* {
            if (host && host->logSink) {
                base::setLogSink(host->logSink);
                base::setLogThreshold(host->logThreshold);
            }
            return new ConfigurableBackend();
        },
        [](hal::Backend* b) { delete b; }};
    return &descriptor;
}
#else
CRIU_AMDGPU_DEFINE_BACKEND(ConfigurableBackend, TEST_BACKEND_NAME)
#endif
