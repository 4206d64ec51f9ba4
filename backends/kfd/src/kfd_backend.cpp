#include "kfd/kfd_backend.h"

#include "kfd/kfd_criu.h"

#include <fcntl.h>

#include <cstring>

namespace kfd {

hal::ProbeAnswer probeKfd(KernelInterface& kernel, const settings::Settings& settings) {
    std::string path = (settings.devRoot.empty() ? std::string("/dev") : settings.devRoot) + "/kfd";
    int fd = kernel.open(path, O_RDWR);
    if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
        return hal::ProbeAnswer::notPresent(
            base::strFormat("no %s: the amdgpu driver with KFD is not loaded here", path.c_str()));
    if (fd == -EACCES || fd == -EPERM)
        return hal::ProbeAnswer::notPresent(base::strFormat(
            "permission denied opening %s: run as root or join the render group", path.c_str()));
    if (fd < 0)
        return hal::ProbeAnswer::notPresent(
            base::strFormat("cannot open %s: %s", path.c_str(), strerror(-fd)));
    KernelFd guard(&kernel, fd);
    auto version = kfdGetVersion(kernel, fd);
    if (!version.ok())
        return hal::ProbeAnswer::notPresent(
            base::strFormat("%s: %s", path.c_str(), version.error().describe().c_str()));
    auto [major, minor] = version.value();
    if (major != kMinKfdMajor || minor < kMinKfdMinor)
        return hal::ProbeAnswer::notPresent(base::strFormat(
            "KFD ioctl version %u.%u of %s is too old: checkpoint/restore needs %u.%u or newer "
            "(Linux 6.0+)",
            major, minor, path.c_str(), kMinKfdMajor, kMinKfdMinor));
    hal::ProbeAnswer answer;
    answer.present = true;
    answer.priority = kKfdBackendPriority;
    answer.capabilities = {hal::capability::kDump, hal::capability::kRestore,
                           hal::capability::kKfdBos, hal::capability::kSdmaCopy};
    answer.reason = base::strFormat("%s, KFD ioctl version %u.%u", path.c_str(), major, minor);
    return answer;
}

KfdBackend::KfdBackend(KernelFactory makeKernel, KfdDeviceOptions options)
    : makeKernel_(std::move(makeKernel)), options_(std::move(options)) {}

hal::ProbeAnswer KfdBackend::probe(const settings::Settings& settings) {
    auto kernel = makeKernel_(settings);
    if (!kernel.ok())
        return hal::ProbeAnswer::notPresent(kernel.error().describe());
    return probeKfd(*kernel.value(), settings);
}

base::Result<std::unique_ptr<hal::Device>> KfdBackend::createDevice(const hal::DeviceEnv& env) {
    if (!env.settings)
        return base::makeError(base::ErrorCode::InvalidArgument, "kfd: no settings");
    HAL_TRY_ASSIGN(std::shared_ptr<KernelInterface> kernel, makeKernel_(*env.settings));
    return std::unique_ptr<hal::Device>(new KfdDevice(env, std::move(kernel), options_));
}

} // namespace kfd
