#pragma once
/// \file
/// The KFD backend: probing (open `<devRoot>/kfd`, AMDKFD_IOC_GET_VERSION >= 1.8) and Device
/// creation, over any KernelInterface.

#include "hal/backend.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_device.h"

#include <functional>
#include <memory>

namespace kfd {

/// Priority of the KFD backend among present backends (above amdgpu-drm's).
inline constexpr int kKfdBackendPriority = 100;

/// Probes for KFD: present with a note of the version, or not present with the precise reason.
hal::ProbeAnswer probeKfd(KernelInterface& kernel, const settings::Settings& settings);

/// The backend, creating a kernel interface per Device with `makeKernel`.
class KfdBackend : public hal::Backend {
public:
    /// Makes the kernel interface the settings ask for (in kfd.so the real one, or a user-space
    /// driver's: kernelFor), or fails saying why.
    using KernelFactory =
        std::function<base::Result<std::shared_ptr<KernelInterface>>(const settings::Settings&)>;
    explicit KfdBackend(KernelFactory makeKernel, KfdDeviceOptions options = {});

    const char* name() const override { return "kfd"; }
    hal::ProbeAnswer probe(const settings::Settings& settings) override;
    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv& env) override;

private:
    KernelFactory makeKernel_;
    KfdDeviceOptions options_;
};

} // namespace kfd
