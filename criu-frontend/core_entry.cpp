// The plugin's C++ core (amdgpu_plugin_core.so): its one exported function fills criu's descriptor
// (which amdgpu_plugin.so holds) with the core's init, exit and hooks, exactly the hooks the
// running criu accepts (criu-frontend/README.md). amdgpu_plugin.so calls it from its constructor,
// before criu verifies the descriptor. Every entry point is an exception barrier
// (PluginSession's public methods; criu_amdgpu_core_describe here).

#include "criu_abi.h"
#include "plugin_descriptor.h"
#include "plugin_session.h"

#include "coordination/paused_record.h"

#include <algorithm>

namespace frontend {
namespace {

PluginSession& session() {
    static PluginSession s;
    return s;
}

CriuAbi& runningAbi() {
    static CriuAbi abi;
    return abi;
}

/// The directory of amdgpu_plugin.so (the backends are in its amdgpu folder).
std::string& pluginDir() {
    static std::string dir;
    return dir;
}

int pluginInit(int stage) {
    PluginSession::Host host;
    try {
        host.services = CriuServices::lookUp();
        host.abi = runningAbi();
        host.pluginDir = pluginDir();
        host.sources = config::Sources::fromProcessEnvironment();
        host.guardianDir = coordination::kDefaultGuardianDir;
    } catch (...) {
        // The session fails only AMD GPU checkpoints when it cannot set itself up.
    }
    return session().init(stage, std::move(host));
}

void pluginExit(int stage, int ret) {
    session().exit(stage, ret);
}

int dumpExtFile(int fd, int id) {
    return session().dumpExtFile(fd, id);
}
int restoreExtFile(int id) {
    return session().restoreExtFile(id);
}
int restoreExtFileRetry(int id, bool* retryNeeded) {
    // criu declares retry_needed without a value: always answer it.
    if (retryNeeded)
        *retryNeeded = false;
    return session().restoreExtFile(id);
}
int handleDeviceVma(int fd, const struct stat* st) {
    return session().handleDeviceVma(fd, st);
}
int updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff, uint64_t* newPgoff,
                 int* pluginFd) {
    return session().updateVmaMap(path, addr, oldPgoff, newPgoff, pluginFd);
}
int resumeDevicesLate(int pid) {
    return session().resumeDevicesLate(pid);
}
int pauseDevices(int pid) {
    return session().pauseDevices(pid);
}
int checkpointDevices(int pid) {
    return session().checkpointDevices(pid);
}
int postForking() {
    return session().postForking();
}
int restoreInit() {
    return session().restoreInit();
}
int dumpDevicesLate(int id) {
    return session().dumpDevicesLate(id);
}
int dumpFinish(int ret) {
    return session().dumpFinish(ret);
}

} // namespace

void fillDescriptor(CriuPluginDesc* desc, const CriuAbi& abi) {
    desc->name = kPluginName;
    desc->init = &pluginInit;
    desc->exit = &pluginExit;
    desc->version = kPluginVersion;
    desc->max_hooks = std::min<unsigned>(abi.maxHooks, kHookSlots);
    for (void*& h : desc->hooks)
        h = nullptr;
    auto set = [&](Hook hook, void* fn) {
        if (abi.has(hook))
            desc->hooks[hook] = fn;
    };
    set(kDumpExtFile, reinterpret_cast<void*>(&dumpExtFile));
    set(kRestoreExtFile, abi.retryNeeded ? reinterpret_cast<void*>(&restoreExtFileRetry)
                                         : reinterpret_cast<void*>(&restoreExtFile));
    set(kHandleDeviceVma, reinterpret_cast<void*>(&handleDeviceVma));
    set(kUpdateVmaMap, reinterpret_cast<void*>(&updateVmaMap));
    set(kResumeDevicesLate, reinterpret_cast<void*>(&resumeDevicesLate));
    set(kPauseDevices, reinterpret_cast<void*>(&pauseDevices));
    set(kCheckpointDevices, reinterpret_cast<void*>(&checkpointDevices));
    set(kPostForking, reinterpret_cast<void*>(&postForking));
    set(kRestoreInit, reinterpret_cast<void*>(&restoreInit));
    set(kDumpDevicesLate, reinterpret_cast<void*>(&dumpDevicesLate));
    set(kDumpFinish, reinterpret_cast<void*>(&dumpFinish));
}

CriuAbi describeSelf(CriuPluginDesc* desc, const std::function<CriuProbe()>& probe,
                     const config::Sources& sources) noexcept {
    try {
        CriuProbe p = probe();
        config::Sources withOptions = sources;
        if (p.hasSymbol && p.hasSymbol("criu_plugin_get_options"))
            withOptions.pluginOptions = CriuServices::lookUp().pluginOptions();
        auto settings = config::loadSettings(withOptions);
        if (settings.ok())
            p.forced = settings->criuAbi;
        CriuAbi abi = detectCriuAbi(p);
        fillDescriptor(desc, abi);
        return abi;
    } catch (...) {
        CriuAbi abi; // the 3.17 ABI: 10 hooks, accepted by every criu
        abi.release = "3.17-3.19";
        abi.how = "detection failed with an exception: assuming the 3.17 ABI";
        fillDescriptor(desc, abi);
        return abi;
    }
}

} // namespace frontend

extern "C" __attribute__((visibility("default"))) void
criu_amdgpu_core_describe(CriuPluginDesc* desc, const char* dir) noexcept {
    try {
        frontend::pluginDir() = dir ? dir : "";
        config::Sources sources = config::Sources::fromProcessEnvironment();
        frontend::runningAbi() = frontend::describeSelf(desc, &frontend::runningCriuProbe, sources);
    } catch (...) {
        // Only the environment snapshot or the copies can throw here (describeSelf never does):
        // the 3.17 ABI, which every criu accepts, filled without allocating.
        frontend::fillDescriptor(desc, frontend::CriuAbi{});
    }
}
