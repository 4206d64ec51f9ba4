#pragma once
/// \file
/// A backend: a shared library with one versioned C entry point. The loader checks the ABI version
/// in a plain C descriptor before any C++ object crosses the library boundary.

#include "base/log.h"
#include "base/result.h"
#include "hal/device.h"
#include "settings/settings.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

/// ABI of the backend entry point: the loader accepts an equal major and a minor at least its own.
#define CRIU_AMDGPU_BACKEND_ABI_MAJOR 1u
#define CRIU_AMDGPU_BACKEND_ABI_MINOR 0u
/// Name of the entry point every backend exports.
#define CRIU_AMDGPU_BACKEND_ENTRY_SYMBOL "criu_amdgpu_backend_entry"

namespace hal {

using base::LogLevel;
using base::LogSink;
using base::logThreshold;
using base::Result;

/// What a backend says it can do (ProbeAnswer::capabilities); the registry prefers a backend with
/// the capability a checkpoint needs, and `criu-amdgpu probe` lists them.
namespace capability {
inline constexpr const char* kDump = "dump";
inline constexpr const char* kRestore = "restore";
/// GPUs simulated in files (the mock backend), never chosen unless configured.
inline constexpr const char* kSimulated = "simulated";
/// BOs of KFD processes (/dev/kfd, AMDKFD_IOC_CRIU_OP).
inline constexpr const char* kKfdBos = "kfd-bos";
/// Contents copied by the GPU's SDMA engine.
inline constexpr const char* kSdmaCopy = "sdma-copy";
/// BOs of render-node processes (amdgpu-topology.img checkpoints are restored by such backends).
inline constexpr const char* kRenderNodeBos = "render-node-bos";
} // namespace capability

/// A backend's answer to "are you usable here?".
struct ProbeAnswer {
    bool present = false;
    int priority = 0;                      ///< higher wins among present backends
    std::vector<std::string> capabilities; ///< hal::capability names
    std::string reason;                    ///< why not present (or a note when present)

    static ProbeAnswer notPresent(std::string why) {
        ProbeAnswer a;
        a.reason = std::move(why);
        return a;
    }
};

/// What the host hands a backend when it is created.
struct HostServices {
    LogSink logSink = nullptr; ///< where the backend's copy of the HAL logs
    LogLevel logThreshold = LogLevel::Warn;
};

/// One kind of device access (KFD, render nodes, mock). Lives as long as its library is loaded.
class Backend {
public:
    virtual ~Backend() = default;
    /// "kfd", "amdgpu-drm", "mock".
    virtual const char* name() const = 0;
    /// Probes the machine with these settings. Absence is an answer, never an error.
    virtual ProbeAnswer probe(const settings::Settings& settings) = 0;
    /// Creates the Device for one criu run; only called when probe said present.
    virtual Result<std::unique_ptr<Device>> createDevice(const DeviceEnv& env) = 0;
};

} // namespace hal

extern "C" {
/// The plain-C descriptor a backend library returns from its entry point.
struct CriuAmdgpuBackendDescriptor {
    uint32_t abiMajor;
    uint32_t abiMinor;
    const char* name;
    /// Creates the backend object; called only after the ABI check.
    hal::Backend* (*create)(const hal::HostServices* host);
    void (*destroy)(hal::Backend* backend);
};
/// The entry point's type.
typedef const CriuAmdgpuBackendDescriptor* (*CriuAmdgpuBackendEntryFn)(void);
}

/// Defines the entry point of a backend library whose Backend subclass is `Class`.
#define CRIU_AMDGPU_DEFINE_BACKEND(Class, backendName)                                             \
    extern "C" __attribute__((visibility("default"))) const CriuAmdgpuBackendDescriptor*           \
    criu_amdgpu_backend_entry(void) {                                                              \
        static const CriuAmdgpuBackendDescriptor descriptor = {                                    \
            CRIU_AMDGPU_BACKEND_ABI_MAJOR, CRIU_AMDGPU_BACKEND_ABI_MINOR, backendName,             \
            [](const hal::HostServices* host) -> hal::Backend* {                                   \
                if (host && host->logSink) {                                                       \
                    base::setLogSink(host->logSink);                                               \
                    base::setLogThreshold(host->logThreshold);                                     \
                }                                                                                  \
                return new Class();                                                                \
            },                                                                                     \
            [](hal::Backend* b) { delete b; }};                                                    \
        return &descriptor;                                                                        \
    }
