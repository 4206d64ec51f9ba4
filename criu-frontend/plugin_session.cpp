#include "plugin_session.h"

#include "config/sources.h"
#include "formats/dmabuf_image.h"
#include "formats/image_names.h"
#include "base/log.h"
#include "formats/render_node_image.h"
#include "formats/topology_codec.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>

namespace frontend {
namespace {

std::string fdPath(int fd) {
    char link[64], buf[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

const char* stageName(int stage) {
    return stage == kStageDump ? "dump" : stage == kStagePreDump ? "pre-dump" : "restore";
}

/// True when the dump wrote a KFD, render-node or dma-buf image for criu's file id `id`.
bool anyAmdgpuImageFor(hal::ImageStore& store, int id) {
    uint32_t fileId = static_cast<uint32_t>(id);
    return store.exists(hal::kfdImageName(fileId)) ||
           store.exists(hal::renderNodeImageName(fileId)) ||
           store.exists(hal::dmabufImageName(fileId));
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
        return 0;
    }

    auto loaded = config::loadConfig(host_.sources);
    if (!loaded.ok()) {
        deferSetupError("configuration error: " + loaded.error().describe());
        return 0;
    }
    settings_ = loaded->settings;
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

void PluginSession::setUpShareExchange() {
    if (!host_.services.fdstoreAdd || !host_.services.fdstoreGet) {
        HAL_LOG_INFO("%s: this criu exports no fdstore_add and fdstore_get: GPU memory shared "
                     "between processes cannot be restored, only memory shared within one",
                     kPluginName);
        return;
    }
    auto exchange = hal::makeTaskShareExchange(
        hal::FdStore{host_.services.fdstoreAdd, host_.services.fdstoreGet});
    if (!exchange.ok()) {
        HAL_LOG_WARN("%s: %s: GPU memory shared between processes cannot be restored",
                     kPluginName, exchange.error().describe().c_str());
        return;
    }
    shares_ = std::move(exchange).value();
    device_->setShareExchange(shares_.get());
}

void PluginSession::setUpParallelRestore() {
    const char* serial = "BO contents are restored in each task";
    if (!host_.abi.has(kPostForking)) {
        HAL_LOG_INFO("%s: parallel-restore needs criu's POST_FORKING hook (criu 4.2 or newer); "
                     "this criu (%s, %u hooks) has none: %s",
                     kPluginName, host_.abi.release.c_str(), host_.abi.maxHooks, serial);
        return;
    }
    if (!host_.services.fdstoreAdd || !host_.services.fdstoreGet) {
        HAL_LOG_INFO("%s: parallel-restore needs criu's fdstore_add and fdstore_get, which this "
                     "criu does not export: %s",
                     kPluginName, serial);
        return;
    }
    auto store = imageStore();
    if (!store.ok() || !(*store)->rereadable()) {
        HAL_LOG_INFO("%s: parallel-restore is not used with criu's image streamer, which serves "
                     "one image at a time to one reader: %s",
                     kPluginName, serial);
        return;
    }
    auto channel = hal::HandoffChannel::create();
    int id = channel.ok() ? host_.services.fdstoreAdd(channel.value()->sendFd()) : -1;
    if (id < 0) {
        HAL_LOG_WARN("%s: parallel-restore could not set up its channel to the restored tasks "
                     "(%s): %s",
                     kPluginName,
                     channel.ok() ? "criu's fdstore_add failed"
                                  : channel.error().describe().c_str(),
                     serial);
        return;
    }
    channel_ = std::move(channel).value();
    auto get = host_.services.fdstoreGet;
    handoff_ = hal::makeSocketHandoff([get, id]() -> hal::Result<hal::SendEnd> {
        int fd = get(id);
        if (fd < 0)
            return hal::makeError(hal::ErrorCode::Io,
                                  "criu's fdstore has no parallel-restore channel (id %d)", id);
        return hal::SendEnd{fd, true};
    });
    device_->setContentHandoff(handoff_.get());
    HAL_LOG_INFO("%s: parallel restore: the restored tasks hand BO contents to criu's main "
                 "process, which restores them while criu restores the rest",
                 kPluginName);
}

bool PluginSession::finishParallelRestore() {
    if (parallel_ && parallel_->running()) {
        auto r = parallel_->finish();
        HAL_LOG_INFO("%s: parallel restore: %zu job(s) done, at most %llu bytes of staging",
                     kPluginName, parallel_->jobsRun(),
                     static_cast<unsigned long long>(parallel_->peakStagingBytes()));
        if (!r.ok()) {
            parallelFailed_ = true;
            restoreBroken_ = true;
            fail("parallel restore", std::move(r).error());
        }
    }
    return !parallelFailed_;
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
                  hal::kTopologyImageName, hal::kRenderNodeBosCapability);
    return hal::kRenderNodeBosCapability;
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

bool PluginSession::startGuardian() {
    if (guardian_)
        return true;
    if (!device_ || stage_ != kStageDump || host_.guardianDir.empty() || guardianFailed_)
        return false;
    hal::Device* device = device_.get();
    auto started = DumpGuardian::start(GuardianOptions{
        host_.guardianDir, backendName_, [device](int pid) { return device->releasePaused(pid); }});
    if (!started.ok()) {
        guardianFailed_ = true;
        HAL_LOG_WARN("%s: no guardian for this dump (%s): if criu dies before the dump ends, the "
                     "GPU work of the dumped processes stays paused until `criu-amdgpu paused "
                     "release PID`",
                     kPluginName, started.error().describe().c_str());
        return false;
    }
    guardian_ = std::move(started).value();
    HAL_LOG_INFO("%s: guardian %d releases the GPU work of the dumped processes if criu dies "
                 "before the dump ends (its log: %s)",
                 kPluginName, guardian_->pid(), guardian_->logPath().c_str());
    return true;
}

bool PluginSession::holdsAmdgpuFile(int pid) {
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (!d)
        return false;
    bool holds = false;
    while (struct dirent* e = readdir(d)) {
        struct stat st {};
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
            !S_ISCHR(st.st_mode))
            continue;
        char target[4096];
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (n > 0 &&
            !recognizer().recognize(st, std::string(target, static_cast<size_t>(n))).empty()) {
            holds = true;
            break;
        }
    }
    closedir(d);
    return holds;
}

void PluginSession::syncGuardian() {
    if (!device_ || stage_ != kStageDump)
        return;
    std::vector<int> paused = device_->pausedProcesses();
    if (!guardian_ && (paused.empty() || !startGuardian()))
        return;
    guardian_->track(paused);
}

void PluginSession::dismissGuardian() {
    if (guardian_)
        guardian_->dismiss();
    guardian_.reset();
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

// ----------------------------------------------------------------------------------- dump

int PluginSession::dumpExtFile(int fd, int id) {
    return guard("dump file", [&] { return dumpExtFileUnguarded(fd, id); });
}

int PluginSession::dumpExtFileUnguarded(int fd, int id) {
    hal::FileRef file;
    file.fd = fd;
    file.id = static_cast<uint32_t>(id);
    if (fd < 0 || fstat(fd, &file.st) != 0)
        return -ENOTSUP;
    file.path = fdPath(fd);
    if (!device_)
        return refuseIfAmdgpu("dump", file.st, file.path);
    auto mine = device_->claimFile(file);
    if (!mine.ok())
        return fail("dump file", std::move(mine).error());
    if (!mine.value())
        return -ENOTSUP;
    registerInInventory();
    auto r = imageStore();
    if (!r.ok())
        return fail("dump file", std::move(r).error());
    auto dumped = device_->dumpFile(file);
    syncGuardian(); // a criu without device hooks pauses here
    if (!dumped.ok())
        return fail("dump file", std::move(dumped).error());
    return 0;
}

int PluginSession::handleDeviceVma(int fd, const struct stat* st) {
    return guard("device VMA", [&] { return handleDeviceVmaUnguarded(fd, st); });
}

int PluginSession::handleDeviceVmaUnguarded(int fd, const struct stat* st) {
    if (!st || fd < 0)
        return -ENOTSUP;
    if (!device_)
        return refuseIfAmdgpu("dump the mapping of", *st, fdPath(fd));
    hal::VmaRef vma;
    vma.fd = fd;
    vma.st = *st;
    vma.path = fdPath(fd);
    auto mine = device_->claimVma(vma);
    if (!mine.ok())
        return fail("device VMA", std::move(mine).error());
    return mine.value() ? 0 : -ENOTSUP;
}

int PluginSession::pauseDevices(int pid) {
    return guard("pause", [&] { return pauseDevicesUnguarded(pid); });
}

int PluginSession::pauseDevicesUnguarded(int pid) {
    if (!device_)
        return -ENOTSUP;
    // A backend checks the parent of an incremental dump in the image directory before it
    // pauses anything. A store that cannot be set up fails the dump later, at checkpoint, and
    // only when the process uses a GPU.
    (void)imageStore();
    // The guardian hears of a process before its pause (criu may die in the middle of it): it
    // starts before the first process that holds an AMD GPU file is paused.
    if (guardian_ || (holdsAmdgpuFile(pid) && startGuardian()))
        guardian_->expect(pid);
    auto paused = device_->pauseProcess(pid);
    syncGuardian();
    if (!paused.ok())
        return fail("pause", std::move(paused).error());
    if (!paused.value())
        return -ENOTSUP;
    registerInInventory();
    return 0;
}

int PluginSession::checkpointDevices(int pid) {
    return guard("checkpoint", [&] { return checkpointDevicesUnguarded(pid); });
}

int PluginSession::checkpointDevicesUnguarded(int pid) {
    if (!device_ || device_->phaseOf(pid) != hal::DumpPhase::Paused)
        return -ENOTSUP;
    auto store = imageStore();
    if (!store.ok())
        return fail("checkpoint", std::move(store).error());
    auto r = device_->checkpointProcess(pid);
    syncGuardian(); // a failed checkpoint unpaused the process
    if (!r.ok())
        return fail("checkpoint", std::move(r).error());
    return 0;
}

int PluginSession::dumpDevicesLate(int) {
    return guard("end of dump", [&] { return dumpDevicesLateUnguarded(); });
}

int PluginSession::dumpDevicesLateUnguarded() {
    // With DUMP_FINISH (criu 4.3+) the dump ends there, where criu says how it went.
    if (!device_ || dumpFinished_ || host_.abi.has(kDumpFinish))
        return -ENOTSUP;
    dumpFinished_ = true;
    auto r = device_->finishDump(true);
    dismissGuardian();
    if (!r.ok())
        return fail("end of dump", std::move(r).error());
    // Other plugins get this hook too.
    return -ENOTSUP;
}

int PluginSession::dumpFinish(int ret) {
    return guard("dump finish", [&] { return dumpFinishUnguarded(ret); });
}

int PluginSession::dumpFinishUnguarded(int ret) {
    if (!device_)
        return -ENOTSUP;
    bool again = dumpFinished_;
    dumpFinished_ = true;
    if (again && ret != 0)
        HAL_LOG_INFO("%s: criu failed the dump after it had finished (%d): the GPU work of the "
                     "dumped processes runs again",
                     kPluginName, ret);
    auto r = device_->finishDump(ret == 0);
    dismissGuardian();
    if (r.ok())
        return 0;
    int rc = fail("dump finish", std::move(r).error());
    // A dump that succeeded and ends the tasks has nothing left to protect: failing it now would
    // make criu resume tasks whose GPU work could not be resumed.
    if (ret == 0 && host_.services.finalState() == kTaskDead)
        return 0;
    return rc;
}

// -------------------------------------------------------------------------------- restore

int PluginSession::restoreExtFile(int id) {
    return guard("restore file", [&] { return restoreExtFileUnguarded(id); });
}

int PluginSession::restoreExtFileUnguarded(int id) {
    if (!device_) {
        // Silent unless the images show this file was ours: then say why it cannot be restored.
        if ((!inertReason_.empty() || !setupError_.empty()) && host_.services.getImageDir) {
            auto store = imageStore();
            if (store.ok() && anyAmdgpuImageFor(**store, id)) {
                HAL_LOG_ERROR("%s: file id %d was an AMD GPU device, and %s", kPluginName, id,
                              unservedReason().c_str());
                return setupError_.empty() ? -ENODEV : -EINVAL;
            }
        }
        return -ENOTSUP;
    }
    auto store = imageStore();
    if (!store.ok())
        return fail("restore file", std::move(store).error());
    auto mine = device_->ownsImage(static_cast<uint32_t>(id));
    if (!mine.ok())
        return fail("restore file", std::move(mine).error());
    if (!mine.value())
        return -ENOTSUP;
    auto fd = device_->restoreFile(static_cast<uint32_t>(id));
    if (!fd.ok())
        return fail("restore file", std::move(fd).error());
    return fd.value();
}

int PluginSession::updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff,
                                uint64_t* newPgoff, int* pluginFd) {
    return guard("update VMA",
                 [&] { return updateVmaMapUnguarded(path, addr, oldPgoff, newPgoff, pluginFd); });
}

int PluginSession::updateVmaMapUnguarded(const char* path, uint64_t addr, uint64_t oldPgoff,
                                         uint64_t* newPgoff, int* pluginFd) {
    if (!device_ || !path || !newPgoff)
        return -ENOTSUP;
    hal::VmaQuery q;
    q.path = path;
    q.addr = addr;
    q.oldPgoff = oldPgoff;
    auto answer = device_->updateVmaMap(q);
    if (!answer.ok())
        return fail("update VMA", std::move(answer).error());
    if (!answer.value())
        return -ENOTSUP;
    *newPgoff = answer.value()->newPgoff;
    if (pluginFd)
        *pluginFd = answer.value()->fd;
    return 1;
}

void PluginSession::stopRestoredTask(int pid) {
    // criu ignores RESUME_DEVICES_LATE's failure and lets the task run, and a task whose GPU
    // queues never resume hangs with no diagnostic. Stop it instead, and say why.
    if (pid > 0 && kill(pid, SIGKILL) == 0)
        HAL_LOG_ERROR("%s: killed restored process %d: its GPU work could not be resumed, "
                      "and it would hang",
                      kPluginName, pid);
    resumeFailed_ = true;
}

int PluginSession::resumeDevicesLate(int pid) {
    return guard(
        "resume", [&] { return resumeDevicesLateUnguarded(pid); },
        [&] {
            if (device_)
                stopRestoredTask(pid);
        });
}

int PluginSession::resumeDevicesLateUnguarded(int pid) {
    if (!device_)
        return -ENOTSUP;
    // No task resumes before every BO content handed over is back and checked.
    if (!finishParallelRestore()) {
        stopRestoredTask(pid);
        return -EIO;
    }
    auto resumed = device_->resumeProcess(pid);
    if (!resumed.ok()) {
        int rc = fail("resume", std::move(resumed).error());
        stopRestoredTask(pid);
        return rc;
    }
    return resumed.value() ? 0 : -ENOTSUP;
}

int PluginSession::postForking() {
    return guard("post-forking", [&] {
        if (!device_)
            return -ENOTSUP;
        auto r = device_->postForking();
        if (!r.ok())
            return fail("post-forking", std::move(r).error());
        if (channel_ && !parallel_) {
            hal::Device* device = device_.get();
            parallel_ = std::make_unique<hal::ParallelRestore>(
                [device](hal::ContentJob& job, std::span<std::byte> staging) {
                    return device->restoreHandedContents(job, staging);
                },
                [device](hal::ContentJob& job) { device->discardHandedContents(job); },
                config::stagingBufferSize(settings_));
            parallel_->start(channel_->receiver());
        }
        return -ENOTSUP;
    });
}

int PluginSession::restoreInit() {
    return guard("restore init", [&] {
        if (!device_)
            return -ENOTSUP;
        auto r = imageStore();
        if (!r.ok())
            return fail("restore init", std::move(r).error());
        return -ENOTSUP;
    });
}

} // namespace frontend
