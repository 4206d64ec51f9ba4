#include "machine.h"
#include "mock_device.h"

#include "base/trusted_path.h"
#include "hal/backend.h"

namespace mock {

/// The mock backend: present only when a mock machine root is configured.
class MockBackend final : public hal::Backend {
public:
    const char* name() const override { return "mock"; }

    hal::ProbeAnswer probe(const config::Settings& settings) override {
        if (settings.mockRoot.empty())
            return hal::ProbeAnswer::notPresent(
                "no mock GPU root is configured (set CRIU_AMDGPU_MOCK_ROOT or mock-root)");
        // The simulated machine steers what the plugin does as root: only from a trusted root.
        if (auto trusted =
                hal::checkTrustedPath(settings.mockRoot, "mock-root", hal::TrustedKind::Directory);
            !trusted.ok())
            return hal::ProbeAnswer::notPresent(trusted.error().describe());
        auto cfg = readMachineConfig(canonicalRoot(settings.mockRoot));
        if (!cfg.ok())
            return hal::ProbeAnswer::notPresent(cfg.error().describe());
        hal::ProbeAnswer answer;
        answer.present = true;
        answer.priority = 1;
        answer.capabilities = {"dump", "restore", "simulated"};
        answer.reason = "mock GPU machine at " + canonicalRoot(settings.mockRoot);
        return answer;
    }

    hal::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv& env) override {
        std::string root = canonicalRoot(env.settings->mockRoot);
        HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
        return std::unique_ptr<hal::Device>(new MockDevice(env, root, cfg));
    }
};

} // namespace mock

CRIU_AMDGPU_DEFINE_BACKEND(mock::MockBackend, "mock")
