#include "mock_bo_file.h"
#include "mock_device.h"

#include "mockgpu/criu_ops.h"
#include "mockgpu/state_codec.h"

#include "base/log.h"
#include "formats/image_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

// The mock's restore: reading its images, recreating each context on its mapped GPU, importing
// the memory restored tasks share, restoring BO contents in the task, resuming, and undoing a
// failed restore. Parallel restore's handover is in mock_parallel_restore.cpp.

namespace mock {

// ---------------------------------------------------------------------------------- restore

base::Result<const MockDevice::MockImage*> MockDevice::imageOf(uint32_t id) {
    auto it = images_.find(id);
    if (it == images_.end()) {
        HAL_TRY_ASSIGN(formats::ImageStore * store, images());
        std::optional<MockImage> image;
        if (store->exists(formats::renderNodeImageName(id))) {
            auto read = formats::readRenderNodeImage(*store, id);
            if (!read.ok() && read.error().code() != base::ErrorCode::NotFound)
                return std::move(read).error();
            std::optional<RenderNodeState> priv;
            if (read.ok() && (priv = decodeRenderNodeState(read->privData)))
                image = MockImage{std::move(read).value(), std::move(*priv)};
        }
        it = images_.emplace(id, std::move(image)).first;
    }
    return it->second ? &*it->second : nullptr;
}

base::Result<bool> MockDevice::ownsImageImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const MockImage* image, imageOf(id));
    return image != nullptr;
}

base::Result<void> MockDevice::restoreContents(const Context& ctx,
                                               const formats::RenderNodeImage& image,
                                               const std::string& gpu) {
    std::vector<std::unique_ptr<BoFile>> bos;
    hal::ContentsLane lane;
    lane.gpu = gpu;
    lane.staging = staging().span();
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        if (isFollower(bo))
            continue;
        bos.push_back(std::make_unique<BoFile>(root_, ctx, bo.handle, bo.size, true));
        lane.bos.push_back(
            restoredBo(image.id, image.gpuId, image.renderMinor, i, bo, bos.back().get()));
    }
    return restoreLane(image.id, lane);
}

hal::BoContents MockDevice::restoredBo(uint32_t id, uint32_t gpuId, uint32_t minor, uint32_t index,
                                       const formats::DrmBoEntry& bo, content::ContentSink* sink) {
    return {{hal::BoFileFamily::DrmPages, id, minor, index},
            hal::boKeyOf(gpuId, bo),
            bo.size,
            boWhat(bo),
            nullptr,
            sink,
            bo.checksum};
}

base::Result<void> MockDevice::restoreLane(uint32_t id, hal::ContentsLane& lane) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(const hal::RestoreChain* chain, restoreChainOf(id));
    lane.staging = laneStaging(lane.staging);
    return hal::restoreBoContents(*store, chain, lane);
}

base::Result<int> MockDevice::restoreFileImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const MockImage* mockImage, imageOf(id));
    if (!mockImage)
        return base::makeError(base::ErrorCode::NotFound, "no mock GPU image for file id %u", id);
    const formats::RenderNodeImage* image = &mockImage->image;
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY(sourceTopology());
    // An incremental image's parents are checked before any GPU is touched.
    HAL_TRY(restoreChainOf(id));
    if (restoreDevDir_.empty())
        restoreDevDir_ = mockImage->priv.state.devDir;
    HAL_TRY_ASSIGN(auto mapping, planFromTopologyImage());
    auto dst = mapping.find(image->gpuId);
    if (dst == mapping.end())
        return base::makeError(base::ErrorCode::NoMapping,
                               "checkpointed GPU 0x%04x of file id %u has no destination GPU",
                               image->gpuId, id);
    HAL_TRY_ASSIGN(topology::Topology local, readMachineTopology(root_));
    const topology::Node* dstNode = local.findGpu(dst->second);
    if (!dstNode)
        return base::makeError(base::ErrorCode::Internal, "mapped GPU 0x%04x is not on %s",
                               dst->second, root_.c_str());

    std::string what = formats::renderNodeImageName(id);
    ContextState state = mockImage->priv.state;
    if (state.bos.size() != image->bos.size())
        return base::makeError(base::ErrorCode::Image,
                               "%s is inconsistent: %zu BOs listed, its context state has %zu",
                               what.c_str(), image->bos.size(), state.bos.size());
    // The memory a follower imports must be in the checkpoint, or the import would wait for an
    // owner that never comes.
    HAL_TRY(formats::checkShareOwnersPresent(*store, *image));
    for (const formats::DrmBoEntry& bo : image->bos) {
        auto known = std::find_if(state.bos.begin(), state.bos.end(),
                                  [&](const BufferObject& b) { return b.handle == bo.handle; });
        if (known == state.bos.end() || known->size != bo.size)
            return base::makeError(base::ErrorCode::Image,
                                   "%s is inconsistent: BO %u does not match its context state",
                                   what.c_str(), bo.handle);
        // Who imports is decided by the image: the owner of shared memory allocates it again.
        known->imported = isFollower(bo);
    }
    HAL_TRY(ensureDeviceNode(*dstNode));
    HAL_TRY_ASSIGN_CONTEXT(Context ctx,
                           criuRestore(root_, state, dstNode->gpuId, dstNode->renderMinor(),
                                       hostPid(), restoreSession_),
                           "recreating mock GPU context of GPU 0x%04x on GPU 0x%04x", image->gpuId,
                           dstNode->gpuId);
    auto shared = shareMemory(ctx, *image);
    if (!shared.ok()) {
        ctx.destroy();
        return std::move(shared.error().addContext(
            base::strFormat("restoring mock GPU 0x%04x -> 0x%04x", image->gpuId, dstNode->gpuId)));
    }
    auto restored =
        contentHandoff()
            ? handOverContents(ctx, *image, dstNode->gpuId)
            : restoreContents(ctx, *image,
                              base::strFormat("GPU 0x%04x (from 0x%04x, mock context %u)",
                                              dstNode->gpuId, image->gpuId, ctx.id()));
    if (!restored.ok()) {
        ctx.destroy();
        return std::move(restored.error().addContext(
            base::strFormat("restoring mock GPU 0x%04x -> 0x%04x", image->gpuId, dstNode->gpuId)));
    }
    std::string node = ctx.nodePath(dstNode->renderMinor());
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) {
        int e = errno;
        ctx.destroy();
        return base::makeErrnoError(base::ErrorCode::Io, e, "cannot open %s", node.c_str());
    }
    return fd;
}

base::Result<void> MockDevice::shareMemory(const Context& ctx,
                                           const formats::RenderNodeImage& image) {
    coordination::ShareExchange& exchange = shareExchange();
    // Owners first, so that a file holding both ends of some memory finds its own.
    for (const formats::DrmBoEntry& bo : image.bos) {
        if (!bo.sharing || bo.sharing->follower)
            continue;
        HAL_TRY_ASSIGN_CONTEXT(int fd, criuExportBo(ctx, bo.handle, true), "exporting shared BO %u",
                               bo.handle);
        auto published = exchange.publish(bo.sharing->key, fd);
        close(fd);
        HAL_TRY_CONTEXT(std::move(published), "publishing shared BO %u", bo.handle);
    }
    for (const formats::DrmBoEntry& bo : image.bos) {
        if (!isFollower(bo))
            continue;
        std::string what = base::strFormat("BO %u of %s", bo.handle,
                                           formats::renderNodeImageName(image.id).c_str());
        HAL_TRY_ASSIGN(int fd,
                       exchange.fetch(bo.sharing->key, coordination::kShareFetchTimeout, what));
        auto imported = criuImportBo(root_, ctx, bo.handle, fd);
        close(fd);
        HAL_TRY_CONTEXT(std::move(imported), "importing the shared memory of %s", what.c_str());
    }
    return base::success();
}

base::Result<bool> MockDevice::resumeImpl(int pid) {
    HAL_TRY_ASSIGN(auto contexts, listContexts(root_));
    // A restored task recorded itself as its /proc names it: in a container, that /proc is the
    // container's, and the pid the one of the container's pid namespace.
    auto key = taskKeyOf(pid);
    int nsPid = key.ok() ? key->pid : 0;
    bool any = false;
    for (const Context& ctx : contexts) {
        auto s = ctx.load();
        if (!s.ok() || !ctx.pausedMarker())
            continue;
        bool restoredByUs = s->restoreSession == restoreSession_;
        if (s->ownerPid != pid && !(restoredByUs && nsPid && s->ownerPid == nsPid))
            continue;
        HAL_TRY_CONTEXT(criuResume(root_, ctx), "resuming GPU 0x%04x (mock context %u)", s->gpuId,
                        ctx.id());
        any = true;
    }
    return any;
}

base::Result<void> MockDevice::abortRestoreImpl() {
    removeUnfinishedContexts(root_, restoreSession_, false); // of tasks killed while making them
    HAL_TRY_ASSIGN(auto contexts, listContexts(root_));
    for (const Context& ctx : contexts) {
        auto s = ctx.load();
        if (s.ok() && s->restoreSession == restoreSession_) {
            HAL_LOG_INFO("mock: removing context %u recreated by the failed restore", ctx.id());
            ctx.destroy();
        }
    }
    return base::success();
}

} // namespace mock
