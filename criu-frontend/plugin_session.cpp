#include "plugin_session.h"
#include "proc_fd.h"

#include "config/sources.h"
#include "base/log.h"
#include "formats/image_names.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>

// What every hook shares: the exception barrier, init (settings, backend, image store), the
// errors of a plugin that serves no GPU here, and exit. The dump hooks are in
// plugin_session_dump.cpp, the restore hooks in plugin_session_restore.cpp.

namespace frontend {
namespace {

const char* stageName(int stage) {
    return stage == kStageDump ? "dump" : stage == kStagePreDump ? "pre-dump" : "restore";
}

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

/// "mock-root = /x (env CRIU_AMDGPU_MOCK_ROOT)" for each option that asks for a backend.
std::string askedBy(const config::LoadedConfig& loaded) {
    std::string out;
    for (const char* name : {"backend", "mock-root"}) {
        const config::EffectiveOption* option = loaded.find(name);
        if (!option || option->origin.rfind("default", 0) == 0)
            continue;
        out += hal::strFormat("%s%s = %s (%s)", out.empty() ? "" : ", ", name,
                              option->value.c_str(), option->origin.c_str());
    }
    return out;
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
        if (device_ && stage_ == kStageDump) {
            // Whatever this dump paused runs again; the dump then fails.
            auto r = device_->finishDump(false);
            if (!r.ok())
                HAL_LOG_ERROR("%s: unpausing after the internal error: %s", kPluginName,
                              r.error().describe().c_str());
            dismissGuardian();
        }
    } catch (...) {
    }
    if (stage_ == kStageRestore)
        restoreBroken_ = true; // exit undoes what the restore recreated
    return -EIO;
}

// -------------------------------------------------------------------------------- set-up

int PluginSession::init(int stage, Host host) {
    host_ = std::move(host);
    stage_ = stage;
    int r = guard("init", [&] { return initUnguarded(stage); });
    // The one refusal of init: criu fails the restore before it reads an image of the
    // checkpoint (but its inventory).
    if (restoreRefused_)
        return -1;
    if (r == 0)
        return 0;
    // An internal error while setting up: like any set-up failure, it fails only the
    // checkpoints that involve an AMD GPU.
    device_.reset();
    setupError_ = "an internal error during set-up (see the error above)";
    return 0;
}

int PluginSession::initUnguarded(int stage) {
    installCriuLogSink(host_.services);
    HAL_LOG_DEBUG("%s %s: %s, criu ABI %s (%u hooks; %s)", kPluginName, CRIU_AMDGPU_VERSION,
                  stageName(stage), host_.abi.release.c_str(), host_.abi.maxHooks,
                  host_.abi.how.c_str());

    // At restore, criu (4.1+) tells whether the dump used this plugin, and fails the restore if
    // a plugin it lists does not take its entry: ask first, whatever happens next. Without the
    // function (older criu, or an ABI forced beyond what criu exports) it cannot tell.
    bool inventoryKnown = stage == kStageRestore && host_.abi.inventory &&
                          host_.services.checkAndRemoveInventoryPlugin;
    bool dumpUsedUs = true;
    if (inventoryKnown)
        dumpUsedUs = host_.services.checkAndRemoveInventoryPlugin(kPluginName, strlen(kPluginName));

    if (host_.abi.pluginOptions)
        host_.sources.pluginOptions = host_.services.pluginOptions();
    mockRoots_ = mockRootsNamedBy(host_.sources);
    if (stage == kStagePreDump || !dumpUsedUs) {
        inertReason_ = stage == kStagePreDump ? "pre-dump has no GPU state to save"
                                              : "the checkpoint did not use AMD GPUs";
        HAL_LOG_DEBUG("%s: inert: %s", kPluginName, inertReason_.c_str());
        // Every restore is checked when signatures are required, GPU or not.
        if (stage == kStageRestore)
            if (auto loaded = config::loadConfig(host_.sources); loaded.ok())
                restoreRefused_ = !restoreSignatureAccepted(loaded->settings);
        return 0;
    }

    auto loaded = config::loadConfig(host_.sources);
    if (!loaded.ok()) {
        deferSetupError("configuration error: " + loaded.error().describe());
        return 0;
    }
    settings_ = loaded->settings;
    if (stage == kStageRestore && !restoreSignatureAccepted(settings_)) {
        restoreRefused_ = true;
        return 0;
    }
    if (stage == kStageDump)
        warnIfCannotSign();
    if (!settings_.mockRoot.empty())
        mockRoots_ = {settings_.mockRoot};
    if (settings_.logLevel >= 0 && !host_.services.printOnLevel)
        hal::setLogThreshold(static_cast<hal::LogLevel>(settings_.logLevel));
    setUpBackend(*loaded, inventoryKnown);
    if (stage == kStageRestore && device_)
        setUpShareExchange();
    if (stage == kStageRestore && settings_.parallelRestore && device_)
        setUpParallelRestore();
    return 0;
}

void PluginSession::setUpBackend(const config::LoadedConfig& loaded, bool inventoryKnown) {
    // Nothing asked for, default device paths, and no GPU driver in the kernel: no backend can
    // be present, so none is loaded (loading them is most of what the plugin would cost a dump
    // on a machine without GPU).
    if (settings_.backends.empty() && settings_.mockRoot.empty() && settings_.devRoot.empty() &&
        settings_.kfdSysfsRoot.empty() && !recognizer().kernelHasGpuDriver()) {
        goInert("no GPU driver is loaded (neither kfd nor drm in " + host_.devicePaths.procDevices +
                    ") and no mock GPU is configured",
                inventoryKnown);
        return;
    }
    registry_ = std::make_unique<hal::BackendRegistry>();
    // Backends have their own copy of the HAL: hand them the same sink and threshold.
    hal::HostServices services;
    services.logSink = installCriuLogSink(host_.services);
    services.logThreshold = hal::logThreshold();
    std::string dir = hal::defaultBackendDir(settings_, host_.pluginDir);
    registry_->discover(dir, settings_, services);
    std::string asked = askedBy(loaded);
    auto chosen = registry_->select(settings_, restoreRouting());
    if (!chosen.ok()) {
        std::string why = chosen.error().describe();
        for (const hal::BackendCandidate& c : registry_->candidates())
            why += hal::strFormat("; %s: %s", c.name.empty() ? c.path.c_str() : c.name.c_str(),
                                  c.loaded ? (c.probe.present ? "present" : c.probe.reason.c_str())
                                           : c.skipReason.c_str());
        if (registry_->candidates().empty())
            why += "; no backend libraries in " + dir;
        if (!asked.empty()) {
            deferSetupError("no backend asked for by " + asked + " can be used: " + why);
            return;
        }
        goInert(why, inventoryKnown);
        return;
    }
    hal::DeviceEnv env;
    env.settings = &settings_;
    auto device = chosen.value()->backend->createDevice(env);
    if (!device.ok()) {
        deferSetupError(hal::strFormat("backend %s could not start%s%s: %s",
                                       chosen.value()->name.c_str(), asked.empty() ? "" : " (",
                                       asked.empty() ? "" : (asked + ")").c_str(),
                                       device.error().describe().c_str()));
        return;
    }
    device_ = std::move(device).value();
    if (images_)
        device_->setImageStore(images_.get());
    backendName_ = chosen.value()->name;
    HAL_LOG_INFO("%s: using backend %s (%s)", kPluginName, backendName_.c_str(),
                 chosen.value()->probe.reason.c_str());
}

void PluginSession::goInert(const std::string& why, bool inventoryKnown) {
    inertReason_ =
        inventoryKnown ? "this checkpoint used AMD GPUs, but none can be used here: " + why : why;
    HAL_LOG_DEBUG("%s: inert: %s", kPluginName, why.c_str());
}

void PluginSession::deferSetupError(std::string error) {
    setupError_ = std::move(error);
    HAL_LOG_WARN("%s: %s (checkpoints of processes that use AMD GPUs will fail until this is "
                 "fixed; others are not affected)",
                 kPluginName, setupError_.c_str());
}

const AmdgpuFileRecognizer& PluginSession::recognizer() {
    if (!recognizer_)
        recognizer_ = std::make_unique<AmdgpuFileRecognizer>(mockRoots_, host_.devicePaths);
    return *recognizer_;
}

std::string PluginSession::unservedReason() const {
    if (!setupError_.empty())
        return "the plugin could not set itself up: " + setupError_;
    return "no backend can serve it here: " + inertReason_;
}

int PluginSession::refuseIfAmdgpu(const char* what, const struct stat& st,
                                  const std::string& path) {
    if (stage_ != kStageDump)
        return -ENOTSUP;
    std::string kind = recognizer().recognize(st, path);
    if (kind.empty())
        return -ENOTSUP;
    HAL_LOG_ERROR("%s: cannot %s %s, %s: %s", kPluginName, what, path.c_str(), kind.c_str(),
                  unservedReason().c_str());
    return setupError_.empty() ? -ENODEV : -EINVAL;
}

hal::Result<hal::ImageStore*> PluginSession::imageStore() {
    if (images_)
        return images_.get();
    if (!host_.services.getImageDir)
        return hal::makeError(hal::ErrorCode::Internal, "criu does not export criu_get_image_dir");
    int dirFd = host_.services.getImageDir();
    if (dirFd < 0)
        return hal::makeError(hal::ErrorCode::Io, "criu has no image directory open");
    // criu says whether it streams (its --stream); the image directory's names do not.
    bool streaming = host_.services.imgStreamerOpen && host_.services.streams();
    if (streaming) {
        // img_streamer_open() takes criu's own open modes and aborts criu on any other: O_DUMP
        // (O_WRONLY | O_CREAT | O_TRUNC) in a dump, O_RSTR (O_RDONLY) in a restore. It returns
        // -ENOENT when the streamer has no such image, -1 with errno on other failures.
        auto open = host_.services.imgStreamerOpen;
        images_ = hal::makeStreamerStore(
            [open](const std::string& name, bool forWrite) {
                std::string copy = name;
                errno = 0;
                int fd = open(copy.data(), forWrite ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY);
                if (fd >= 0 || fd == -ENOENT)
                    return fd;
                return errno ? -errno : -EIO;
            },
            stage_ == kStageDump ? hal::StreamDirection::Dump : hal::StreamDirection::Restore);
    } else {
        images_ = hal::makeBorrowedDirectoryStore(host_.services.getImageDir,
                                                  "criu image directory " + fdPath(dirFd));
    }
    if (device_)
        device_->setImageStore(images_.get());
    return images_.get();
}

std::string PluginSession::restoreRouting() {
    // Only the render-node backends write amdgpu-topology.img: such a checkpoint lists its BOs
    // in its render-node images, and goes to a backend that restores them when one is usable.
    if (stage_ != kStageRestore)
        return {};
    auto store = imageStore();
    if (!store.ok() || !(*store)->exists(hal::kTopologyImageName))
        return {};
    HAL_LOG_DEBUG("%s: %s in the checkpoint: a backend with %s is preferred", kPluginName,
                  hal::kTopologyImageName, hal::capability::kRenderNodeBos);
    return hal::capability::kRenderNodeBos;
}

int PluginSession::fail(const char* hook, hal::Error error) {
    HAL_LOG_ERROR("%s (%s backend, %s): %s", kPluginName, backendName_.c_str(), hook,
                  error.describe().c_str());
    return error.toNegativeErrno() == -ENOTSUP ? -EIO : error.toNegativeErrno();
}

void PluginSession::registerInInventory() {
    if (inventoryAdded_ || !host_.abi.inventory || !host_.services.addInventoryPlugin)
        return;
    if (host_.services.addInventoryPlugin(kPluginName) != 0)
        HAL_LOG_WARN("%s: could not register in criu's inventory", kPluginName);
    inventoryAdded_ = true;
}

// ------------------------------------------------------------------------------------ end

void PluginSession::exit(int stage, int ret) {
    guard("exit", [&] {
        exitUnguarded(stage, ret);
        return 0;
    });
    try {
        dismissGuardian();
        parallel_.reset(); // its threads use the device
        device_.reset();
        images_.reset();
        registry_.reset();
    } catch (...) {
    }
}

void PluginSession::exitUnguarded(int stage, int ret) {
    if (!device_)
        return;
    if (stage == kStageDump && !dumpFinished_) {
        auto r = device_->finishDump(ret == 0);
        if (!r.ok())
            HAL_LOG_ERROR("%s: ending the dump: %s", kPluginName, r.error().describe().c_str());
        dismissGuardian();
    } else if (stage == kStageRestore) {
        finishParallelRestore(); // criu failed before any resume: the worker ends first
        parallel_.reset();
        auto r = device_->finishRestore(ret == 0 && !resumeFailed_ && !restoreBroken_);
        if (!r.ok())
            HAL_LOG_ERROR("%s: ending the restore: %s", kPluginName, r.error().describe().c_str());
    }
}

} // namespace frontend
