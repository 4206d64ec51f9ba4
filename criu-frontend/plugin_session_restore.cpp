#include "plugin_session.h"
#include "task_fd_floor.h"

#include "base/log.h"
#include "formats/image_names.h"

#include <cerrno>
#include <csignal>

#include <unistd.h>

// The restore hooks (RESTORE_INIT, RESTORE_EXT_FILE, UPDATE_VMA_MAP, POST_FORKING,
// RESUME_DEVICES_LATE) and what init sets up for them: the share exchange and parallel restore.

namespace frontend {
namespace {

/// True when the dump wrote a KFD, render-node or dma-buf image for criu's file id `id`.
bool anyAmdgpuImageFor(hal::ImageStore& store, int id) {
    uint32_t fileId = static_cast<uint32_t>(id);
    return store.exists(hal::kfdImageName(fileId)) ||
           store.exists(hal::renderNodeImageName(fileId)) ||
           store.exists(hal::dmabufImageName(fileId));
}

} // namespace

// ------------------------------------------------------------------ set-up for the restore

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
        HAL_LOG_WARN("%s: %s: GPU memory shared between processes cannot be restored", kPluginName,
                     exchange.error().describe().c_str());
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
    // This runs in the restored task: what the backend keeps open there goes above its fds.
    LowFdsHeld held(host_.services.findUnusedFdPid ? host_.services.findUnusedFdPid(getpid()) : 0);
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
