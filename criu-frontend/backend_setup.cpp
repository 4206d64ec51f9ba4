#include "backend_setup.h"

#include "base/log.h"
#include "config/sources.h"
#include "formats/image_names.h"

namespace frontend {
namespace {

/// "mock-root = /x (env CRIU_AMDGPU_MOCK_ROOT)" for each option that asks for a backend.
std::string askedBy(const config::LoadedConfig& loaded) {
    std::string out;
    for (const char* name : {"backend", "mock-root"}) {
        const config::EffectiveOption* option = loaded.find(name);
        if (!option || option->origin.rfind("default", 0) == 0)
            continue;
        out += base::strFormat("%s%s = %s (%s)", out.empty() ? "" : ", ", name,
                               option->value.c_str(), option->origin.c_str());
    }
    return out;
}

/// At restore, the capability the checkpoint asks of the backend ("" when any will do).
std::string restoreRouting(SessionContext& ctx) {
    // Only the render-node backends write amdgpu-topology.img: such a checkpoint lists its BOs
    // in its render-node images, and goes to a backend that restores them when one is usable.
    if (ctx.stage != kStageRestore)
        return {};
    auto store = ctx.imageStore();
    if (!store.ok() || !(*store)->exists(formats::kTopologyImageName))
        return {};
    HAL_LOG_DEBUG("%s: %s in the checkpoint: a backend with %s is preferred", kPluginName,
                  formats::kTopologyImageName, hal::capability::kRenderNodeBos);
    return hal::capability::kRenderNodeBos;
}

} // namespace

/// The mock roots the sources name in the environment or in plugin options, read without loading
/// the configuration (which may be what failed).
std::vector<std::string> mockRootsNamedBy(const config::Sources& sources) {
    std::vector<std::string> roots;
    const config::OptionSpec* spec = config::findOption("mock-root");
    if (!spec)
        return roots;
    if (sources.env) {
        auto it = sources.env->find(std::string(spec->envName));
        if (it != sources.env->end() && !it->second.empty())
            roots.push_back(it->second);
    }
    for (const std::string& entry : sources.pluginOptions) {
        std::string_view text = entry;
        if (text.substr(0, 2) == "--")
            text.remove_prefix(2);
        config::PluginOptionText option;
        if (config::splitPluginOption(text, &option) && config::isAmdgpuPlugin(option.plugin) &&
            option.name == spec->name && !option.value.empty())
            roots.push_back(option.value);
    }
    return roots;
}

void setUpBackend(SessionContext& ctx, std::unique_ptr<hal::BackendRegistry>& registry,
                  const config::LoadedConfig& loaded, bool inventoryKnown) {
    // Nothing asked for, default device paths, and no GPU driver in the kernel: no backend can
    // be present, so none is loaded (loading them is most of what the plugin would cost a dump
    // on a machine without GPU).
    if (ctx.settings.backends.empty() && ctx.settings.mockRoot.empty() &&
        ctx.settings.devRoot.empty() && ctx.settings.kfdSysfsRoot.empty() &&
        !ctx.recognizer().kernelHasGpuDriver()) {
        ctx.goInert("no GPU driver is loaded (neither kfd nor drm in " +
                        ctx.host.devicePaths.procDevices + ") and no mock GPU is configured",
                    inventoryKnown);
        return;
    }
    registry = std::make_unique<hal::BackendRegistry>();
    // The backends share the core's HAL (libcriu-amdgpu-hal.so); a program with the HAL linked
    // in has a copy of its own beside theirs: hand them the same sink and threshold either way.
    hal::HostServices services;
    services.logSink = installCriuLogSink(ctx.host.services);
    services.logThreshold = base::logThreshold();
    std::string dir = hal::defaultBackendDir(ctx.settings, ctx.host.pluginDir);
    registry->discover(dir, ctx.settings, services);
    std::string asked = askedBy(loaded);
    auto chosen = registry->select(ctx.settings, restoreRouting(ctx));
    if (!chosen.ok()) {
        std::string why = chosen.error().describe();
        for (const hal::BackendCandidate& c : registry->candidates())
            why += base::strFormat("; %s: %s", c.name.empty() ? c.path.c_str() : c.name.c_str(),
                                   c.loaded ? (c.probe.present ? "present" : c.probe.reason.c_str())
                                            : c.skipReason.c_str());
        if (registry->candidates().empty())
            why += "; no backend libraries in " + dir;
        if (!asked.empty()) {
            ctx.deferSetupError("no backend asked for by " + asked + " can be used: " + why);
            return;
        }
        ctx.goInert(why, inventoryKnown);
        return;
    }
    hal::DeviceEnv env;
    env.settings = &ctx.settings;
    auto device = chosen.value()->backend->createDevice(env);
    if (!device.ok()) {
        ctx.deferSetupError(base::strFormat("backend %s could not start%s%s: %s",
                                            chosen.value()->name.c_str(), asked.empty() ? "" : " (",
                                            asked.empty() ? "" : (asked + ")").c_str(),
                                            device.error().describe().c_str()));
        return;
    }
    ctx.device = std::move(device).value();
    // The backends not chosen go: their code and data would stay resident in criu to its end.
    registry->unloadAllBut(chosen.value());
    if (ctx.images)
        ctx.device->setImageStore(ctx.images.get());
    ctx.backendName = chosen.value()->name;
    HAL_LOG_INFO("%s: using backend %s (%s)", kPluginName, ctx.backendName.c_str(),
                 chosen.value()->probe.reason.c_str());
}

} // namespace frontend
