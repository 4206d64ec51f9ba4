#include "restore_session.h"
#include "task_fd_floor.h"

#include "base/log.h"
#include "formats/image_names.h"
#include "formats/render_node_image.h"
#include "topology/topology.h"

#include <cerrno>
#include <csignal>
#include <string>

#include <unistd.h>

namespace frontend {
namespace {

/// True when the dump wrote a KFD, render-node or dma-buf image for criu's file id `id`.
bool anyAmdgpuImageFor(formats::ImageStore& store, int id) {
    uint32_t fileId = static_cast<uint32_t>(id);
    return store.exists(formats::kfdImageName(fileId)) ||
           store.exists(formats::renderNodeImageName(fileId)) ||
           store.exists(formats::dmabufImageName(fileId));
}

/// " (renderD<minor> of GPU 0x...)" when criu's file id `id` was a render node whose image
/// reads, so that a refusal names the node the restore lacks; "" otherwise.
std::string renderNodeOf(formats::ImageStore& store, int id) {
    uint32_t fileId = static_cast<uint32_t>(id);
    if (!store.exists(formats::renderNodeImageName(fileId)))
        return "";
    auto image = formats::readRenderNodeImage(store, fileId);
    if (!image.ok())
        return "";
    return " (renderD" + std::to_string(image->renderMinor) + " of GPU " +
           topology::gpuIdHex(image->gpuId) + ")";
}

} // namespace

// ------------------------------------------------------------------ set-up for the restore

void RestoreSession::setUp() {
    setUpShareExchange();
    if (ctx_.settings.parallelRestore)
        setUpParallelRestore();
}

void RestoreSession::setUpShareExchange() {
    if (!ctx_.host.services.fdstoreAdd || !ctx_.host.services.fdstoreGet) {
        HAL_LOG_INFO("%s: this criu exports no fdstore_add and fdstore_get: GPU memory shared "
                     "between processes cannot be restored, only memory shared within one",
                     kPluginName);
        return;
    }
    auto exchange = coordination::makeTaskShareExchange(
        coordination::FdStore{ctx_.host.services.fdstoreAdd, ctx_.host.services.fdstoreGet});
    if (!exchange.ok()) {
        HAL_LOG_WARN("%s: %s: GPU memory shared between processes cannot be restored", kPluginName,
                     exchange.error().describe().c_str());
        return;
    }
    shares_ = std::move(exchange).value();
    ctx_.device->setShareExchange(shares_.get());
}

void RestoreSession::setUpParallelRestore() {
    const char* serial = "BO contents are restored in each task";
    if (!ctx_.host.abi.has(kPostForking)) {
        HAL_LOG_INFO("%s: parallel-restore needs criu's POST_FORKING hook (criu 4.2 or newer); "
                     "this criu (%s, %u hooks) has none: %s",
                     kPluginName, ctx_.host.abi.release.c_str(), ctx_.host.abi.maxHooks, serial);
        return;
    }
    if (!ctx_.host.services.fdstoreAdd || !ctx_.host.services.fdstoreGet) {
        HAL_LOG_INFO("%s: parallel-restore needs criu's fdstore_add and fdstore_get, which this "
                     "criu does not export: %s",
                     kPluginName, serial);
        return;
    }
    auto store = ctx_.imageStore();
    if (!store.ok() || !(*store)->rereadable()) {
        HAL_LOG_INFO("%s: parallel-restore is not used with criu's image streamer, which serves "
                     "one image at a time to one reader: %s",
                     kPluginName, serial);
        return;
    }
    auto channel = coordination::HandoffChannel::create();
    int id = channel.ok() ? ctx_.host.services.fdstoreAdd(channel.value()->sendFd()) : -1;
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
    auto get = ctx_.host.services.fdstoreGet;
    handoff_ = coordination::makeSocketHandoff([get, id]() -> base::Result<coordination::SendEnd> {
        int fd = get(id);
        if (fd < 0)
            return base::makeError(base::ErrorCode::Io,
                                   "criu's fdstore has no parallel-restore channel (id %d)", id);
        return coordination::SendEnd{fd, true};
    });
    ctx_.device->setContentHandoff(handoff_.get());
    HAL_LOG_INFO("%s: parallel restore: the restored tasks hand BO contents to criu's main "
                 "process, which restores them while criu restores the rest",
                 kPluginName);
}

bool RestoreSession::finishParallelRestore() {
    if (parallel_ && parallel_->running()) {
        auto r = parallel_->finish();
        HAL_LOG_INFO("%s: parallel restore: %zu job(s) done, at most %llu bytes of staging",
                     kPluginName, parallel_->jobsRun(),
                     static_cast<unsigned long long>(parallel_->peakStagingBytes()));
        if (!r.ok()) {
            parallelFailed_ = true;
            broken_ = true;
            ctx_.fail("parallel restore", std::move(r).error());
        }
    }
    return !parallelFailed_;
}

// -------------------------------------------------------------------------------- restore

int RestoreSession::restoreExtFile(int id) {
    if (!ctx_.device) {
        // Silent unless the images show this file was ours: then say why it cannot be restored.
        if ((!ctx_.inertReason.empty() || !ctx_.setupError.empty()) &&
            ctx_.host.services.getImageDir) {
            auto store = ctx_.imageStore();
            if (store.ok() && anyAmdgpuImageFor(**store, id)) {
                HAL_LOG_ERROR("%s: file id %d was an AMD GPU device%s, and %s", kPluginName, id,
                              renderNodeOf(**store, id).c_str(), ctx_.unservedReason().c_str());
                return ctx_.setupError.empty() ? -ENODEV : -EINVAL;
            }
        }
        return -ENOTSUP;
    }
    auto store = ctx_.imageStore();
    if (!store.ok())
        return ctx_.fail("restore file", std::move(store).error());
    auto mine = ctx_.device->ownsImage(static_cast<uint32_t>(id));
    if (!mine.ok())
        return ctx_.fail("restore file", std::move(mine).error());
    if (!mine.value())
        return -ENOTSUP;
    // This runs in the restored task: what the backend keeps open there goes above its fds.
    LowFdsHeld held(
        ctx_.host.services.findUnusedFdPid ? ctx_.host.services.findUnusedFdPid(getpid()) : 0);
    auto fd = ctx_.device->restoreFile(static_cast<uint32_t>(id));
    if (!fd.ok())
        return ctx_.fail("restore file", std::move(fd).error());
    return fd.value();
}

int RestoreSession::updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff,
                                 uint64_t* newPgoff, int* pluginFd) {
    if (!ctx_.device || !path || !newPgoff)
        return -ENOTSUP;
    hal::VmaQuery q;
    q.path = path;
    q.addr = addr;
    q.oldPgoff = oldPgoff;
    auto answer = ctx_.device->updateVmaMap(q);
    if (!answer.ok())
        return ctx_.fail("update VMA", std::move(answer).error());
    if (!answer.value())
        return -ENOTSUP;
    *newPgoff = answer.value()->newPgoff;
    if (pluginFd)
        *pluginFd = answer.value()->fd;
    return 1;
}

void RestoreSession::stopRestoredTask(int pid) {
    // criu ignores RESUME_DEVICES_LATE's failure and lets the task run, and a task whose GPU
    // queues never resume hangs with no diagnostic. Stop it instead, and say why.
    if (pid > 0 && kill(pid, SIGKILL) == 0)
        HAL_LOG_ERROR("%s: killed restored process %d: its GPU work could not be resumed, "
                      "and it would hang",
                      kPluginName, pid);
    resumeFailed_ = true;
}

int RestoreSession::resumeDevicesLate(int pid) {
    if (!ctx_.device)
        return -ENOTSUP;
    // No task resumes before every BO content handed over is back and checked.
    if (!finishParallelRestore()) {
        stopRestoredTask(pid);
        return -EIO;
    }
    auto resumed = ctx_.device->resumeProcess(pid);
    if (!resumed.ok()) {
        int rc = ctx_.fail("resume", std::move(resumed).error());
        stopRestoredTask(pid);
        return rc;
    }
    return resumed.value() ? 0 : -ENOTSUP;
}

int RestoreSession::postForking() {
    if (!ctx_.device)
        return -ENOTSUP;
    auto r = ctx_.device->postForking();
    if (!r.ok())
        return ctx_.fail("post-forking", std::move(r).error());
    if (channel_ && !parallel_) {
        hal::Device* device = ctx_.device.get();
        parallel_ = std::make_unique<coordination::ParallelRestore>(
            [device](coordination::ContentJob& job, std::span<std::byte> staging) {
                return device->restoreHandedContents(job, staging);
            },
            [device](coordination::ContentJob& job) { device->discardHandedContents(job); },
            settings::stagingBufferSize(ctx_.settings));
        parallel_->start(channel_->receiver());
    }
    return -ENOTSUP;
}

int RestoreSession::restoreInit() {
    if (!ctx_.device)
        return -ENOTSUP;
    auto r = ctx_.imageStore();
    if (!r.ok())
        return ctx_.fail("restore init", std::move(r).error());
    return -ENOTSUP;
}

// ------------------------------------------------------------------------------------ end

void RestoreSession::end(int ret) {
    if (!ctx_.device)
        return;
    finishParallelRestore(); // criu failed before any resume: the worker ends first
    parallel_.reset();
    auto r = ctx_.device->finishRestore(ret == 0 && !resumeFailed_ && !broken_);
    if (!r.ok())
        HAL_LOG_ERROR("%s: ending the restore: %s", kPluginName, r.error().describe().c_str());
}

} // namespace frontend
