#include "mock_device.h"

#include "criu_ops.h"
#include "faults.h"

#include "hal/framed_image.h"
#include "hal/log.h"
#include "hal/topology_codec.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>

namespace mock {
namespace {

constexpr const char* kPrivMagic = "mockctx ";

/// Reads a BO of a paused context for the dump.
class BoSource final : public hal::ContentSource {
public:
    BoSource(const std::string& root, const Context& ctx, uint32_t handle)
        : root_(root), ctx_(ctx), handle_(handle) {}
    hal::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        return criuReadBo(root_, ctx_, handle_, offset, out);
    }

private:
    const std::string& root_;
    const Context& ctx_;
    uint32_t handle_;
};

/// Writes a BO of a context being restored.
class BoSink final : public hal::ContentSink {
public:
    BoSink(const std::string& root, const Context& ctx, uint32_t handle)
        : root_(root), ctx_(ctx), handle_(handle) {}
    hal::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        return criuWriteBo(root_, ctx_, handle_, offset, in);
    }

private:
    const std::string& root_;
    const Context& ctx_;
    uint32_t handle_;
};

std::string readLink(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

} // namespace

uint32_t mockBoDomains(uint32_t flags) {
    const uint32_t kGemDomainGtt = 0x2, kGemDomainVram = 0x4; // amdgpu_drm.h
    uint32_t domains = ((flags & 1) ? kGemDomainVram : 0) | ((flags & 2) ? kGemDomainGtt : 0);
    return domains ? domains : kGemDomainGtt;
}

MockDevice::MockDevice(hal::DeviceEnv env, std::string root, MachineConfig config)
    : hal::Device("mock", env), root_(std::move(root)), config_(config) {
    // Unique enough among concurrent restores of one machine: pid and time.
    restoreSession_ = (static_cast<uint64_t>(getpid()) << 32) ^
                      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (!restoreSession_)
        restoreSession_ = 1;
}

hal::StagingBuffer& MockDevice::staging() {
    if (!staging_)
        staging_ = std::make_unique<hal::StagingBuffer>(config::stagingBufferSize(settings()));
    return *staging_;
}

// ------------------------------------------------------------------------------------ dump

hal::Result<bool> MockDevice::claimFileImpl(const hal::FileRef& file) {
    return S_ISCHR(file.st.st_mode) && file.st.st_rdev == config_.deviceRdev &&
           contextIdOfNodePath(root_, file.path) != 0;
}

hal::Result<int> MockDevice::processOfFileImpl(const hal::FileRef& file) {
    uint32_t id = contextIdOfNodePath(root_, file.path);
    auto owner = ownerOfContext_.find(id);
    if (owner != ownerOfContext_.end())
        return owner->second;
    HAL_TRY_ASSIGN(ContextState s, Context(root_, id).load());
    return s.ownerPid;
}

/// What a task holds of a mock machine: its contexts, and any other driver file (which means the
/// task is inside a driver call).
struct HeldFiles {
    std::set<uint32_t> contexts;
    std::string insideDriver;
};

static hal::Result<HeldFiles> filesHeldBy(int pid, const std::string& root) {
    std::string fdDir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(fdDir.c_str());
    if (!d)
        return hal::makeErrnoError(hal::ErrorCode::NotFound, errno, "cannot list %s",
                                   fdDir.c_str());
    HeldFiles held;
    while (struct dirent* e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        std::string target = readLink(fdDir + "/" + e->d_name);
        if (target.compare(0, root.size() + 1, root + "/") != 0)
            continue;
        uint32_t id = contextIdOfNodePath(root, target);
        if (id)
            held.contexts.insert(id);
        else
            held.insideDriver = target;
    }
    closedir(d);
    return held;
}

hal::Result<bool> MockDevice::pauseImpl(int pid) {
    // criu 4.x pauses before it freezes the task. The process's call gate closes first and its
    // calls in progress end (a frozen task is then never inside a driver call, as with a
    // kernel's ioctls); later calls wait at the gate until the dump ends. Then the queues stop.
    HAL_TRY(gates_.hold(pid));
    HAL_TRY_ASSIGN(HeldFiles held, filesHeldBy(pid, root_));
    const std::set<uint32_t>& ids = held.contexts;
    std::vector<DumpedContext> mine;
    for (uint32_t id : ids) {
        if (ownerOfContext_.count(id))
            continue; // shared with a process paused earlier (an inherited fd)
        Context ctx(root_, id);
        auto known = ctx.load();
        uint32_t gpu = known.ok() ? known->gpuId : 0;
        auto paused = criuPause(root_, ctx);
        if (!paused.ok()) {
            for (const DumpedContext& done : mine) {
                auto undo = criuUnpause(root_, Context(root_, done.id));
                if (!undo.ok())
                    HAL_LOG_ERROR("mock: unpausing context %u failed: %s", done.id,
                                  undo.error().describe().c_str());
                ownerOfContext_.erase(done.id);
            }
            gates_.release(pid);
            return std::move(paused.error().addContext(
                hal::strFormat("while pausing GPU 0x%04x (mock context %u) of process %d", gpu, id,
                               pid)));
        }
        ownerOfContext_[id] = pid;
        DumpedContext dc;
        dc.id = id;
        dc.state.gpuId = gpu;
        mine.push_back(dc);
    }
    if (mine.empty())
        return false;
    dumped_[pid] = std::move(mine);
    return true;
}

hal::Result<void> MockDevice::collectObjectsImpl(int pid) {
    // The task is stopped now, outside any driver call: its pause held its calls at the gate.
    // A file of the driver other than a device node open in it means otherwise.
    HAL_TRY_ASSIGN(HeldFiles held, filesHeldBy(pid, root_));
    if (!held.insideDriver.empty())
        return hal::makeError(hal::ErrorCode::Internal,
                              "process %d is frozen with %s of the mock GPU driver open, inside "
                              "a driver call its pause did not hold (a bug of the mock driver)",
                              pid, held.insideDriver.c_str());
    for (DumpedContext& dc : dumped_[pid]) {
        HAL_TRY_ASSIGN_CONTEXT(dc.state, criuCheckpoint(root_, Context(root_, dc.id)),
                               "checkpointing GPU 0x%04x (mock context %u)", dc.state.gpuId,
                               dc.id);
    }
    return hal::success();
}

hal::Result<void> MockDevice::streamContentsImpl(int) {
    // BO contents are named by criu's file id, known when criu dumps the file: they are saved
    // then (the context stays paused until the dump ends).
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    if (!topologyWritten_) {
        HAL_TRY_ASSIGN(hal::Topology topo, readMachineTopology(root_));
        HAL_TRY(hal::writeTopologyImage(*store, topo));
        topologyWritten_ = true;
    }
    return hal::success();
}

hal::Result<uint64_t> MockDevice::saveContents(const DumpedContext& dc,
                                               const hal::RenderNodeImage& image, uint32_t index) {
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    const hal::DrmBoEntry& bo = image.bos[index];
    std::string name = hal::drmPagesImageName(image.id, image.renderMinor, index);
    HAL_TRY_ASSIGN(auto writer, hal::createFramedImage(*store, name, bo.size));
    Context ctx(root_, dc.id);
    BoSource source(root_, ctx, bo.handle);
    hal::Fnv1a64 digest;
    HAL_TRY_CONTEXT(hal::dumpContents(source, bo.size, *writer, staging(), &digest),
                    "saving BO %u (%llu bytes) of mock GPU 0x%04x to %s", bo.handle,
                    static_cast<unsigned long long>(bo.size), dc.state.gpuId, name.c_str());
    HAL_TRY(writer->close());
    return digest.value();
}

hal::Result<void> MockDevice::writeFileImagesImpl(const hal::FileRef& file, int pid) {
    uint32_t id = contextIdOfNodePath(root_, file.path);
    const DumpedContext* dc = nullptr;
    for (const DumpedContext& c : dumped_[pid])
        if (c.id == id)
            dc = &c;
    if (!dc)
        return hal::makeError(hal::ErrorCode::Internal,
                              "mock GPU context %u of %s was not checkpointed with process %d", id,
                              file.path.c_str(), pid);
    HAL_TRY(checkFault(root_, "write-images"));
    hal::RenderNodeImage image;
    image.id = file.id;
    image.gpuId = dc->state.gpuId;
    image.renderMinor = static_cast<uint32_t>(dc->state.renderMinor);
    for (const BufferObject& bo : dc->state.bos) {
        hal::DrmBoEntry e;
        e.size = bo.size;
        e.allocFlags = bo.flags;
        e.preferredDomains = mockBoDomains(bo.flags);
        e.handle = bo.handle;
        e.vms.push_back(hal::DrmVmEntry{bo.gpuVa, bo.size, 0, bo.flags});
        image.bos.push_back(e);
    }
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        HAL_TRY_ASSIGN(uint64_t checksum, saveContents(*dc, image, i));
        image.bos[i].contentsFnv1a64 = checksum;
    }
    image.privData = kPrivMagic + std::to_string(id) + "\n" + encodeState(dc->state);
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    return hal::writeRenderNodeImage(*store, image);
}

hal::Result<void> MockDevice::unpauseImpl(int pid) {
    std::optional<hal::Error> first;
    for (const DumpedContext& dc : dumped_[pid]) {
        auto r = criuUnpause(root_, Context(root_, dc.id));
        if (!r.ok() && !first)
            first = std::move(r.error().addContext(hal::strFormat(
                "while unpausing GPU 0x%04x (mock context %u)", dc.state.gpuId, dc.id)));
    }
    gates_.release(pid);
    if (first)
        return std::move(*first);
    return hal::success();
}

// ---------------------------------------------------------------------------------- restore

hal::Result<const hal::RenderNodeImage*> MockDevice::imageOf(uint32_t id) {
    auto it = images_.find(id);
    if (it == images_.end()) {
        HAL_TRY_ASSIGN(hal::ImageStore * store, images());
        std::optional<hal::RenderNodeImage> image;
        if (store->exists(hal::renderNodeImageName(id))) {
            auto read = hal::readRenderNodeImage(*store, id);
            if (!read.ok() && read.error().code() != hal::ErrorCode::NotFound)
                return std::move(read).error();
            if (read.ok() && read->privData.compare(0, strlen(kPrivMagic), kPrivMagic) == 0)
                image = std::move(read).value();
        }
        it = images_.emplace(id, std::move(image)).first;
    }
    return it->second ? &*it->second : nullptr;
}

hal::Result<bool> MockDevice::ownsImageImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const hal::RenderNodeImage* image, imageOf(id));
    return image != nullptr;
}

hal::Result<void> MockDevice::restoreContents(const Context& ctx,
                                              const hal::RenderNodeImage& image, uint32_t index) {
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    const hal::DrmBoEntry& bo = image.bos[index];
    std::string name = hal::drmPagesImageName(image.id, image.renderMinor, index);
    HAL_TRY_ASSIGN(hal::FramedImage file, hal::openFramedImage(*store, name));
    HAL_TRY(hal::checkContentsSize(file, bo.size, hal::strFormat("BO %u holds", bo.handle)));
    BoSink sink(root_, ctx, bo.handle);
    hal::Fnv1a64 digest;
    HAL_TRY_CONTEXT(hal::restoreContents(*file.reader, bo.size, sink, staging(), &digest),
                    "restoring BO %u from %s", bo.handle, name.c_str());
    HAL_TRY(hal::expectImageEnd(file, bo.size));
    if (bo.contentsFnv1a64 && *bo.contentsFnv1a64 != digest.value())
        return hal::makeError(hal::ErrorCode::Image,
                              "%s is corrupt: checksum %016llx, the dump recorded %016llx",
                              name.c_str(), static_cast<unsigned long long>(digest.value()),
                              static_cast<unsigned long long>(*bo.contentsFnv1a64));
    return hal::success();
}

hal::Result<int> MockDevice::restoreFileImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const hal::RenderNodeImage* image, imageOf(id));
    if (!image)
        return hal::makeError(hal::ErrorCode::NotFound, "no mock GPU image for file id %u", id);
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    if (!sourceTopology_) {
        HAL_TRY_ASSIGN(sourceTopology_, hal::readTopologyImage(*store));
    }
    HAL_TRY_ASSIGN(auto mapping, planGpuMapping(*sourceTopology_));
    auto dst = mapping.find(image->gpuId);
    if (dst == mapping.end())
        return hal::makeError(hal::ErrorCode::NoMapping,
                              "checkpointed GPU 0x%04x of file id %u has no destination GPU",
                              image->gpuId, id);
    HAL_TRY_ASSIGN(hal::Topology local, readMachineTopology(root_));
    const hal::Node* dstNode = local.findGpu(dst->second);
    if (!dstNode)
        return hal::makeError(hal::ErrorCode::Internal, "mapped GPU 0x%04x is not on %s",
                              dst->second, root_.c_str());

    std::string what = hal::renderNodeImageName(id);
    size_t nl = image->privData.find('\n');
    HAL_TRY_ASSIGN(ContextState state,
                   decodeState(nl == std::string::npos ? "" : image->privData.substr(nl + 1), what));
    if (state.bos.size() != image->bos.size())
        return hal::makeError(hal::ErrorCode::Image,
                              "%s is inconsistent: %zu BOs listed, its context state has %zu",
                              what.c_str(), image->bos.size(), state.bos.size());
    for (const hal::DrmBoEntry& bo : image->bos) {
        const BufferObject* known = state.findBo(bo.handle);
        if (!known || known->size != bo.size)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s is inconsistent: BO %u does not match its context state",
                                  what.c_str(), bo.handle);
    }
    HAL_TRY_ASSIGN_CONTEXT(Context ctx,
                           criuRestore(root_, state, dstNode->gpuId, dstNode->renderMinor(),
                                       hostPid(), restoreSession_),
                           "recreating mock GPU context of GPU 0x%04x on GPU 0x%04x",
                           image->gpuId, dstNode->gpuId);
    for (uint32_t i = 0; i < image->bos.size(); ++i) {
        auto restored = restoreContents(ctx, *image, i);
        if (!restored.ok()) {
            ctx.destroy();
            return std::move(restored.error().addContext(
                hal::strFormat("restoring mock GPU 0x%04x -> 0x%04x", image->gpuId,
                               dstNode->gpuId)));
        }
    }
    std::string node = ctx.nodePath(dstNode->renderMinor());
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) {
        int e = errno;
        ctx.destroy();
        return hal::makeErrnoError(hal::ErrorCode::Io, e, "cannot open %s", node.c_str());
    }
    return fd;
}

hal::Result<bool> MockDevice::resumeImpl(int pid) {
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
        HAL_TRY_CONTEXT(criuResume(root_, ctx), "resuming mock GPU context %u", ctx.id());
        any = true;
    }
    return any;
}

hal::Result<void> MockDevice::abortRestoreImpl() {
    HAL_TRY_ASSIGN(auto contexts, listContexts(root_));
    for (const Context& ctx : contexts) {
        auto s = ctx.load();
        if (s.ok() && s->restoreSession == restoreSession_) {
            HAL_LOG_INFO("mock: removing context %u recreated by the failed restore", ctx.id());
            ctx.destroy();
        }
    }
    return hal::success();
}

hal::Result<hal::Topology> MockDevice::localTopologyImpl() { return readMachineTopology(root_); }

} // namespace mock
