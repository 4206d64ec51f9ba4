#pragma once
/// \file
/// The amdgpu-drm Backend: probing for amdgpu render nodes on a kernel with GEM_LIST_HANDLES,
/// and creating DrmDevice.

#include "amdgpu-drm/kernel_interface.h"
#include "amdgpu-drm/paths.h"

#include "hal/backend.h"

#include <functional>
#include <memory>

namespace drm {

/// Priority of this backend: below kfd, which wins wherever /dev/kfd exists.
inline constexpr int kBackendPriority = 50;

/// The render-node-only backend.
class DrmBackend : public hal::Backend {
public:
    /// Paths derived from the settings, optionally adjusted (tests point them at temp trees).
    using PathsHook = std::function<void(Paths&)>;
    /// The kernel the settings ask for (driver_kernel.h's kernelFor), or an error naming why not.
    using KernelFor =
        std::function<base::Result<std::shared_ptr<KernelInterface>>(const settings::Settings&)>;
    /// All calls go through `kernel`.
    explicit DrmBackend(std::shared_ptr<KernelInterface> kernel, PathsHook hook = nullptr)
        : kernel_(std::move(kernel)), hook_(std::move(hook)) {}
    /// All calls go through the kernel `kernelFor` gives for the settings of the first probe.
    explicit DrmBackend(KernelFor kernelFor) : kernelFor_(std::move(kernelFor)) {}

    const char* name() const override;
    hal::ProbeAnswer probe(const settings::Settings& settings) override;
    base::Result<std::unique_ptr<hal::Device>> createDevice(const hal::DeviceEnv& env) override;

private:
    Paths pathsFor(const settings::Settings& settings) const;
    /// kernel_, made by kernelFor_ for `settings` when there is none yet.
    base::Result<void> haveKernel(const settings::Settings& settings);
    std::shared_ptr<KernelInterface> kernel_;
    PathsHook hook_;
    KernelFor kernelFor_;
};

} // namespace drm
