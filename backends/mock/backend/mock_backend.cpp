#include "mock_device.h"
#include "mockgpu/machine.h"

#include "base/trusted_path.h"
#include "hal/backend.h"

namespace mock {

/// The mock backend: present only when a mock machine root is configured.
class MockBackend final : public hal::Backend {
    /// The simulated machine steers what the plugin does as root: only from a trusted root, named
    /// as the judged walk resolved it (its files are then shared by path with the mock driver).
    static base::Result<std::string> trustedRoot(const std::string& mockRoot) {
        HAL_TRY_ASSIGN(base::TrustedPath root,
                       base::openTrustedPath(mockRoot, "mock-root", base::TrustedKind::Directory));
        return root.resolved();
    }

public:
    const char* name() const override { return "mock"; }

    hal::ProbeAnswer probe(const settings::Settings& settings) override {
        if (settings.mockRoot.empty())
            return hal::ProbeAnswer::notPresent(
                "no mock GPU root is configured (set CRIU_AMDGPU_MOCK_ROOT or mock-root)");
        auto root = trustedRoot(settings.mockRoot);
        if (!root.ok())
            return hal::ProbeAnswer::notPresent(root.error().describe());
        auto cfg = readMachineConfig(*root);
        if (!cfg.ok())
            return hal::ProbeAnswer::notPresent(cfg.error().describe());
        hal::ProbeAnswer answer;
        answer.present = true;
        answer.priority = 1;
        answer.capabilities = {hal::capability::kDump, hal::capability::kRestore,
                               hal::capability::kSimulated};
        answer.reason = "mock GPU machine at " + *root;
        return answer;
    }

    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv& env) override {
        HAL_TRY_ASSIGN(std::string root, trustedRoot(env.settings->mockRoot));
        HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
        return std::unique_ptr<hal::Device>(new MockDevice(env, root, cfg));
    }
};

} // namespace mock

CRIU_AMDGPU_DEFINE_BACKEND(mock::MockBackend, "mock")
