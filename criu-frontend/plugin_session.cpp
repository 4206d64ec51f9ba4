#include "plugin_session.h"
#include "backend_setup.h"

#include "base/log.h"
#include "config/sources.h"
#include "formats/image_names.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>

// The exception barrier, init (settings, backend), the hooks handed to the stage's session
// (dump_session.cpp, restore_session.cpp), and exit.

namespace frontend {
namespace {

const char* stageName(int stage) {
    return stage == kStageDump ? "dump" : stage == kStagePreDump ? "pre-dump" : "restore";
}

} // namespace

// ------------------------------------------------------------------------ exception barrier

int PluginSession::guard(const char* hook, const std::function<int()>& body,
                         const std::function<void()>& rollback) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        if (rollback) {
            try {
                rollback();
            } catch (...) {
            }
        }
        return afterException(hook, e.what());
    } catch (...) {
        if (rollback) {
            try {
                rollback();
            } catch (...) {
            }
        }
        return afterException(hook, "an exception that is not a std::exception");
    }
}

int PluginSession::afterException(const char* hook, const char* what) noexcept {
    try {
        HAL_LOG_ERROR("%s: internal error in %s: %s (a bug in the plugin or a backend; please "
                      "report it with criu's log)",
                      kPluginName, hook, what);
    } catch (...) {
    }
    try {
        if (dump_)
            dump_->abandon();
    } catch (...) {
    }
    if (restore_)
        restore_->abandon(); // exit undoes what the restore recreated
    return -EIO;
}

// -------------------------------------------------------------------------------- set-up

int PluginSession::init(int stage, Host host) {
    ctx_.host = std::move(host);
    ctx_.stage = stage;
    if (stage == kStageDump)
        dump_ = std::make_unique<DumpSession>(ctx_);
    else if (stage == kStageRestore)
        restore_ = std::make_unique<RestoreSession>(ctx_);
    int r = guard("init", [&] { return initUnguarded(stage); });
    // The one refusal of init: criu fails the restore before it reads an image of the
    // checkpoint (but its inventory).
    if (restoreRefused_)
        return -1;
    if (r == 0)
        return 0;
    // An internal error while setting up: like any set-up failure, it fails only the
    // checkpoints that involve an AMD GPU.
    ctx_.device.reset();
    ctx_.setupError = "an internal error during set-up (see the error above)";
    return 0;
}

int PluginSession::initUnguarded(int stage) {
    installCriuLogSink(ctx_.host.services);
    HAL_LOG_DEBUG("%s %s: %s, criu ABI %s (%u hooks; %s)", kPluginName, CRIU_AMDGPU_VERSION,
                  stageName(stage), ctx_.host.abi.release.c_str(), ctx_.host.abi.maxHooks,
                  ctx_.host.abi.how.c_str());

    // At restore, criu (4.1+) tells whether the dump used this plugin, and fails the restore if
    // a plugin it lists does not take its entry: ask first, whatever happens next. Without the
    // function (older criu, or an ABI forced beyond what criu exports) it cannot tell.
    bool inventoryKnown = stage == kStageRestore && ctx_.host.abi.inventory &&
                          ctx_.host.services.checkAndRemoveInventoryPlugin;
    bool dumpUsedUs = true;
    if (inventoryKnown)
        dumpUsedUs =
            ctx_.host.services.checkAndRemoveInventoryPlugin(kPluginName, strlen(kPluginName));

    if (ctx_.host.abi.pluginOptions)
        ctx_.host.sources.pluginOptions = ctx_.host.services.pluginOptions();
    ctx_.mockRoots = mockRootsNamedBy(ctx_.host.sources);
    if (stage == kStagePreDump || !dumpUsedUs) {
        ctx_.inertReason = stage == kStagePreDump ? "pre-dump has no GPU state to save"
                                                  : "the checkpoint did not use AMD GPUs";
        HAL_LOG_DEBUG("%s: inert: %s", kPluginName, ctx_.inertReason.c_str());
        // Every restore is checked when signatures are required, GPU or not.
        if (stage == kStageRestore)
            if (auto loaded = config::loadConfig(ctx_.host.sources); loaded.ok())
                restoreRefused_ = !restore_->signatureAccepted(loaded->settings);
        return 0;
    }

    auto loaded = config::loadConfig(ctx_.host.sources);
    if (!loaded.ok()) {
        ctx_.deferSetupError("configuration error: " + loaded.error().describe());
        return 0;
    }
    ctx_.settings = loaded->settings;
    if (restore_ && !restore_->signatureAccepted(ctx_.settings)) {
        restoreRefused_ = true;
        return 0;
    }
    if (dump_)
        dump_->warnIfCannotSign();
    if (!ctx_.settings.mockRoot.empty())
        ctx_.mockRoots = {ctx_.settings.mockRoot};
    if (ctx_.settings.logLevel >= 0 && !ctx_.host.services.printOnLevel)
        base::setLogThreshold(static_cast<base::LogLevel>(ctx_.settings.logLevel));
    setUpBackend(ctx_, registry_, *loaded, inventoryKnown);
    if (restore_ && ctx_.device)
        restore_->setUp();
    return 0;
}

// ------------------------------------------------------------------------------------ end

void PluginSession::exit(int, int ret) {
    guard("exit", [&] {
        if (dump_)
            dump_->end(ret);
        else if (restore_)
            restore_->end(ret);
        return 0;
    });
    try {
        if (dump_)
            dump_->dismissGuardian();
        ctx_.device.reset();
        ctx_.images.reset();
        registry_.reset();
    } catch (...) {
    }
}

// ------------------------------------------------------------------------------- the hooks

int PluginSession::dumpHook(const char* hook, const std::function<int(DumpSession&)>& body) {
    return guard(hook, [&] { return dump_ ? body(*dump_) : -ENOTSUP; });
}

int PluginSession::restoreHook(const char* hook, const std::function<int(RestoreSession&)>& body,
                               const std::function<void(RestoreSession&)>& rollback) {
    return guard(
        hook, [&] { return restore_ ? body(*restore_) : -ENOTSUP; },
        [&] {
            if (restore_ && rollback)
                rollback(*restore_);
        });
}

int PluginSession::dumpExtFile(int fd, int id) {
    return dumpHook("dump file", [&](DumpSession& d) { return d.dumpExtFile(fd, id); });
}

int PluginSession::handleDeviceVma(int fd, const struct stat* st) {
    return dumpHook("device VMA", [&](DumpSession& d) { return d.handleDeviceVma(fd, st); });
}

int PluginSession::pauseDevices(int pid) {
    return dumpHook("pause", [&](DumpSession& d) { return d.pauseDevices(pid); });
}

int PluginSession::checkpointDevices(int pid) {
    return dumpHook("checkpoint", [&](DumpSession& d) { return d.checkpointDevices(pid); });
}

int PluginSession::dumpDevicesLate(int) {
    return dumpHook("end of dump", [&](DumpSession& d) { return d.dumpDevicesLate(); });
}

int PluginSession::dumpFinish(int ret) {
    return dumpHook("dump finish", [&](DumpSession& d) { return d.dumpFinish(ret); });
}

int PluginSession::restoreInit() {
    return restoreHook("restore init", [&](RestoreSession& r) { return r.restoreInit(); });
}

int PluginSession::restoreExtFile(int id) {
    return restoreHook("restore file", [&](RestoreSession& r) { return r.restoreExtFile(id); });
}

int PluginSession::updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff,
                                uint64_t* newPgoff, int* pluginFd) {
    return restoreHook("update VMA", [&](RestoreSession& r) {
        return r.updateVmaMap(path, addr, oldPgoff, newPgoff, pluginFd);
    });
}

int PluginSession::postForking() {
    return restoreHook("post-forking", [&](RestoreSession& r) { return r.postForking(); });
}

int PluginSession::resumeDevicesLate(int pid) {
    return restoreHook(
        "resume", [&](RestoreSession& r) { return r.resumeDevicesLate(pid); },
        [&](RestoreSession& r) {
            if (ctx_.device)
                r.stopRestoredTask(pid);
        });
}

} // namespace frontend
