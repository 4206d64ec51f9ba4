#include "plugin_session.h"

#include "hal/dmabuf_image.h"
#include "hal/log.h"
#include "hal/render_node_image.h"
#include "hal/topology_codec.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

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
    return store.exists(hal::strFormat("amdgpu-kfd-%u.img", fileId)) ||
           store.exists(hal::renderNodeImageName(fileId)) ||
           store.exists(hal::dmabufImageName(fileId));
}

} // namespace

int PluginSession::init(int stage, Host host) {
    host_ = std::move(host);
    stage_ = stage;
    installCriuLogSink(host_.services);
    HAL_LOG_DEBUG("%s 0.2.0: %s, criu ABI %s (%u hooks; %s)", kPluginName, stageName(stage),
                  host_.abi.release.c_str(), host_.abi.maxHooks, host_.abi.how.c_str());

    if (host_.abi.pluginOptions)
        host_.sources.pluginOptions = host_.services.pluginOptions();
    auto settings = config::loadSettings(host_.sources);
    if (!settings.ok()) {
        HAL_LOG_ERROR("%s: configuration error: %s", kPluginName,
                      settings.error().describe().c_str());
        return -1;
    }
    settings_ = std::move(settings).value();
    if (settings_.parallelRestore) {
        HAL_LOG_WARN("%s: parallel-restore is ignored inside criu: BO contents are restored in "
                     "each task (criu's POST_FORKING runs in another process, without the tasks' "
                     "dmabuf fds)",
                     kPluginName);
        settings_.parallelRestore = false;
    }
    if (settings_.logLevel >= 0 && !host_.services.printOnLevel)
        hal::setLogThreshold(static_cast<hal::LogLevel>(settings_.logLevel));

    // At restore, criu (4.1+) tells whether the dump used this plugin. Without the function
    // (older criu, or an ABI forced beyond what criu exports) it cannot, as before 4.1.
    bool inventoryKnown = stage == kStageRestore && host_.abi.inventory &&
                          host_.services.checkAndRemoveInventoryPlugin;
    bool dumpUsedUs = true;
    if (inventoryKnown)
        dumpUsedUs = host_.services.checkAndRemoveInventoryPlugin(kPluginName, strlen(kPluginName));
    if (stage == kStagePreDump || !dumpUsedUs) {
        inertReason_ = stage == kStagePreDump ? "pre-dump has no GPU state to save"
                                              : "the checkpoint did not use AMD GPUs";
        HAL_LOG_DEBUG("%s: inert: %s", kPluginName, inertReason_.c_str());
        return 0;
    }

    registry_ = std::make_unique<hal::BackendRegistry>();
    // Backends have their own copy of the HAL: hand them the same sink and threshold.
    hal::HostServices services;
    services.logSink = installCriuLogSink(host_.services);
    services.logThreshold = hal::logThreshold();
    std::string dir = hal::defaultBackendDir(settings_, host_.pluginDir);
    registry_->discover(dir, settings_, services);
    auto chosen = registry_->select(settings_, restoreRouting());
    if (!chosen.ok()) {
        bool asked = !settings_.backends.empty() || !settings_.mockRoot.empty();
        std::string why = chosen.error().describe();
        for (const hal::BackendCandidate& c : registry_->candidates())
            why += hal::strFormat("; %s: %s", c.name.empty() ? c.path.c_str() : c.name.c_str(),
                                  c.loaded ? (c.probe.present ? "present" : c.probe.reason.c_str())
                                           : c.skipReason.c_str());
        if (registry_->candidates().empty())
            why += "; no backend libraries in " + dir;
        if (asked || inventoryKnown) {
            HAL_LOG_ERROR("%s: %s%s", kPluginName,
                          inventoryKnown && !asked
                              ? "this checkpoint used AMD GPUs, but none can be used here: "
                              : "",
                          why.c_str());
            return -1;
        }
        inertReason_ = why;
        HAL_LOG_DEBUG("%s: inert: %s", kPluginName, why.c_str());
        return 0;
    }
    hal::DeviceEnv env;
    env.settings = &settings_;
    auto device = chosen.value()->backend->createDevice(env);
    if (!device.ok()) {
        HAL_LOG_ERROR("%s: backend %s: %s", kPluginName, chosen.value()->name.c_str(),
                      device.error().describe().c_str());
        return -1;
    }
    device_ = std::move(device).value();
    if (images_)
        device_->setImageStore(images_.get());
    backendName_ = chosen.value()->name;
    HAL_LOG_INFO("%s: using backend %s (%s)", kPluginName, backendName_.c_str(),
                 chosen.value()->probe.reason.c_str());
    return 0;
}

hal::Result<hal::ImageStore*> PluginSession::imageStore() {
    if (images_)
        return images_.get();
    if (!host_.services.getImageDir)
        return hal::makeError(hal::ErrorCode::Internal,
                              "criu does not export criu_get_image_dir");
    int dirFd = host_.services.getImageDir();
    if (dirFd < 0)
        return hal::makeError(hal::ErrorCode::Io, "criu has no image directory open");
    // criu streams images when its streamer socket sits in the image directory.
    bool streaming = host_.services.imgStreamerOpen &&
                     (faccessat(dirFd, "streamer-capture.sock", F_OK, 0) == 0 ||
                      faccessat(dirFd, "streamer-serve.sock", F_OK, 0) == 0);
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

void PluginSession::exit(int stage, int ret) {
    if (device_) {
        if (stage == kStageDump && !dumpFinished_) {
            auto r = device_->finishDump(ret == 0);
            if (!r.ok())
                HAL_LOG_ERROR("%s: ending the dump: %s", kPluginName, r.error().describe().c_str());
        } else if (stage == kStageRestore) {
            auto r = device_->finishRestore(ret == 0 && !resumeFailed_);
            if (!r.ok())
                HAL_LOG_ERROR("%s: ending the restore: %s", kPluginName,
                              r.error().describe().c_str());
        }
    }
    device_.reset();
    images_.reset();
    registry_.reset();
}

int PluginSession::dumpExtFile(int fd, int id) {
    if (!device_)
        return -ENOTSUP;
    hal::FileRef file;
    file.fd = fd;
    file.id = static_cast<uint32_t>(id);
    if (fstat(fd, &file.st) != 0)
        return -ENOTSUP;
    file.path = fdPath(fd);
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
    if (!dumped.ok())
        return fail("dump file", std::move(dumped).error());
    return 0;
}

int PluginSession::restoreExtFile(int id) {
    if (!device_) {
        // Silent unless the images show this file was ours: then say why it cannot be restored.
        if (!inertReason_.empty() && host_.services.getImageDir) {
            auto store = imageStore();
            if (store.ok() && anyAmdgpuImageFor(**store, id)) {
                HAL_LOG_ERROR("%s: file id %d was an AMD GPU device, but no backend can "
                              "restore it here: %s",
                              kPluginName, id, inertReason_.c_str());
                return -ENODEV;
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

int PluginSession::handleDeviceVma(int fd, const struct stat* st) {
    if (!device_ || !st)
        return -ENOTSUP;
    hal::VmaRef vma;
    vma.fd = fd;
    vma.st = *st;
    vma.path = fdPath(fd);
    auto mine = device_->claimVma(vma);
    if (!mine.ok())
        return fail("device VMA", std::move(mine).error());
    return mine.value() ? 0 : -ENOTSUP;
}

int PluginSession::updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff,
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
    return 0;
}

int PluginSession::resumeDevicesLate(int pid) {
    if (!device_)
        return -ENOTSUP;
    auto resumed = device_->resumeProcess(pid);
    if (!resumed.ok()) {
        // criu ignores this hook's failure and lets the task run, and a task whose GPU queues
        // never resume hangs with no diagnostic. Stop it instead, and say why.
        int rc = fail("resume", std::move(resumed).error());
        if (kill(pid, SIGKILL) == 0)
            HAL_LOG_ERROR("%s: killed restored process %d: its GPU work could not be resumed, "
                          "and it would hang",
                          kPluginName, pid);
        resumeFailed_ = true;
        return rc;
    }
    return resumed.value() ? 0 : -ENOTSUP;
}

int PluginSession::pauseDevices(int pid) {
    if (!device_)
        return -ENOTSUP;
    auto paused = device_->pauseProcess(pid);
    if (!paused.ok())
        return fail("pause", std::move(paused).error());
    if (!paused.value())
        return -ENOTSUP;
    registerInInventory();
    return 0;
}

int PluginSession::checkpointDevices(int pid) {
    if (!device_ || device_->phaseOf(pid) != hal::DumpPhase::Paused)
        return -ENOTSUP;
    auto store = imageStore();
    if (!store.ok())
        return fail("checkpoint", std::move(store).error());
    auto r = device_->checkpointProcess(pid);
    if (!r.ok())
        return fail("checkpoint", std::move(r).error());
    return 0;
}

int PluginSession::dumpDevicesLate(int) {
    if (!device_ || dumpFinished_)
        return -ENOTSUP;
    dumpFinished_ = true;
    auto r = device_->finishDump(true);
    if (!r.ok())
        return fail("end of dump", std::move(r).error());
    // Other plugins get this hook too.
    return -ENOTSUP;
}

int PluginSession::postForking() {
    if (!device_)
        return -ENOTSUP;
    auto r = device_->postForking();
    if (!r.ok())
        return fail("post-forking", std::move(r).error());
    return -ENOTSUP;
}

int PluginSession::restoreInit() {
    if (!device_)
        return -ENOTSUP;
    auto r = imageStore();
    if (!r.ok())
        return fail("restore init", std::move(r).error());
    return -ENOTSUP;
}

} // namespace frontend
