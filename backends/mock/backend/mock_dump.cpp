#include "mock_bo_file.h"
#include "mock_device.h"

#include "mockgpu/criu_ops.h"
#include "mockgpu/faults.h"
#include "mockgpu/state_codec.h"

#include "base/log.h"
#include "coordination/process_pin.h"
#include "formats/topology_codec.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

// The mock's dump: claiming its files, pausing and checkpointing contexts, writing the images
// and BO contents, unpausing, and releasing what a dead criu left paused (the guardian).

namespace mock {

/// How often an unpause is asked before a dump gives up on a context.
constexpr int kUnpauseTries = 3;

/// criuUnpause, asked again when it fails: a context left paused stops the process's GPU work
/// for good (the fault sweep, tests/mock/fault_sweep_test.cpp, found one failed unpause doing so).
static base::Result<void> unpauseAsking(const std::string& root, const Context& ctx) {
    auto r = criuUnpause(root, ctx);
    for (int again = 1; !r.ok() && again < kUnpauseTries; ++again) {
        HAL_LOG_WARN("mock: unpausing context %u failed (%s); trying again", ctx.id(),
                     r.error().describe().c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(again * 5));
        r = criuUnpause(root, ctx);
    }
    return r;
}

namespace {

std::string readLink(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

} // namespace

// ------------------------------------------------------------------------------------ dump

base::Result<bool> MockDevice::claimFileImpl(const hal::FileRef& file) {
    return S_ISCHR(file.st.st_mode) && file.st.st_rdev == config_.deviceRdev &&
           contextIdOfNodePath(root_, file.path) != 0;
}

base::Result<int> MockDevice::processOfFileImpl(const hal::FileRef& file) {
    if (dumped_.empty())
        dumpWithoutDeviceHooks_ = true; // older criu: DUMP_EXT_FILE before any device hook
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

static base::Result<HeldFiles> filesHeldBy(int pid, const std::string& root) {
    std::string fdDir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(fdDir.c_str());
    if (!d)
        return base::makeErrnoError(base::ErrorCode::NotFound, errno, "cannot list %s",
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

base::Result<bool> MockDevice::pauseImpl(int pid) {
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
                auto undo = unpauseAsking(root_, Context(root_, done.id));
                if (!undo.ok())
                    HAL_LOG_ERROR("mock: unpausing context %u failed: %s", done.id,
                                  undo.error().describe().c_str());
                ownerOfContext_.erase(done.id);
            }
            gates_.release(pid);
            return std::move(paused.error().addContext(base::strFormat(
                "while pausing GPU 0x%04x (mock context %u) of process %d", gpu, id, pid)));
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

base::Result<void> MockDevice::collectObjectsImpl(int pid) {
    // The task is stopped now, outside any driver call: its pause held its calls at the gate.
    // A file of the driver other than a device node open in it means otherwise.
    HAL_TRY_ASSIGN(HeldFiles held, filesHeldBy(pid, root_));
    if (!held.insideDriver.empty())
        return base::makeError(base::ErrorCode::Internal,
                               "process %d is frozen with %s of the mock GPU driver open, inside "
                               "a driver call its pause did not hold (a bug of the mock driver)",
                               pid, held.insideDriver.c_str());
    for (DumpedContext& dc : dumped_[pid]) {
        HAL_TRY_ASSIGN_CONTEXT(dc.state, criuCheckpoint(root_, Context(root_, dc.id)),
                               "checkpointing GPU 0x%04x (mock context %u)", dc.state.gpuId, dc.id);
    }
    return base::success();
}

base::Result<void> MockDevice::streamContentsImpl(int) {
    // BO contents are named by criu's file id, known when criu dumps the file: they are saved
    // then (the context stays paused until the dump ends).
    return base::success();
}

base::Result<void> MockDevice::writeTopologyOnce() {
    if (topologyWritten_)
        return base::success();
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(topology::Topology topo, readMachineTopology(root_));
    if (!dumpWithoutDeviceHooks_) {
        // criu 4.0+ paused and checkpointed every process before dumping any file: keep only
        // the GPUs they use, so a restore needs only those (a new pod may be given no others).
        std::set<int> used;
        for (const auto& [pid, contexts] : dumped_)
            for (const DumpedContext& dc : contexts)
                if (const topology::Node* gpu = topo.findGpu(dc.state.gpuId))
                    used.insert(gpu->renderMinor());
        topo = topology::usedGpusOnly(topo, used);
    }
    HAL_TRY_CONTEXT(formats::writeTopologyImage(*store, topo), "while writing %s",
                    formats::kTopologyImageName);
    topologyWritten_ = true;
    return base::success();
}

base::Result<void> MockDevice::saveContents(const DumpedContext& dc,
                                            formats::RenderNodeImage& image) {
    Context ctx(root_, dc.id);
    std::vector<std::unique_ptr<BoFile>> bos;
    std::vector<hal::ContentsLane> lanes(1);
    lanes[0].gpu = base::strFormat("GPU 0x%04x (mock context %u)", dc.state.gpuId, dc.id);
    lanes[0].staging = laneStaging(staging().span());
    std::vector<uint32_t> saved; // BO index of each file
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        if (isFollower(bo))
            continue; // its contents are its owner's
        saved.push_back(i);
        bos.push_back(std::make_unique<BoFile>(root_, ctx, bo.handle, bo.size, false));
        lanes[0].bos.push_back({{hal::BoFileFamily::DrmPages, image.id, image.renderMinor, i},
                                hal::boKeyOf(dc.state.gpuId, bo),
                                bo.size,
                                boWhat(bo),
                                bos.back().get(),
                                nullptr,
                                std::nullopt});
    }
    HAL_TRY(saveBoContents(image.id, lanes));
    for (size_t f = 0; f < saved.size(); ++f)
        image.bos[saved[f]].checksum = lanes[0].bos[f].checksum;
    return base::success();
}

base::Result<void> MockDevice::writeFileImagesImpl(const hal::FileRef& file, int pid) {
    uint32_t id = contextIdOfNodePath(root_, file.path);
    const DumpedContext* dc = nullptr;
    for (const DumpedContext& c : dumped_[pid])
        if (c.id == id)
            dc = &c;
    if (!dc)
        return base::makeError(base::ErrorCode::Internal,
                               "mock GPU context %u of %s was not checkpointed with process %d", id,
                               file.path.c_str(), pid);
    HAL_TRY(checkFault(root_, "write-images"));
    HAL_TRY(writeTopologyOnce());
    formats::RenderNodeImage image;
    image.id = file.id;
    image.gpuId = dc->state.gpuId;
    image.renderMinor = static_cast<uint32_t>(dc->state.renderMinor);
    Context ctx(root_, id);
    for (const BufferObject& bo : dc->state.bos) {
        formats::DrmBoEntry e;
        e.size = bo.size;
        e.allocFlags = bo.flags;
        e.preferredDomains = mockBoDomains(bo.flags);
        e.handle = bo.handle;
        e.isImport = bo.imported;
        e.vms.push_back(formats::DrmVmEntry{bo.gpuVa, bo.size, 0, bo.flags});
        HAL_TRY_ASSIGN(Context::BoMemory memory, ctx.boMemory(bo.handle));
        if (memory.holders > 1) {
            // Memory held by several BOs (of this process or others): the first BO of this dump
            // that holds it owns its contents; the others import it again at restore.
            auto [owner, first] = shareOwners_.emplace(memory.id, file.id);
            e.sharing = formats::BoSharing{memory.id, !first, first ? 0u : owner->second};
        }
        image.bos.push_back(e);
    }
    HAL_TRY(saveContents(*dc, image));
    image.privData = encodeRenderNodeState(RenderNodeState{id, dc->state});
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    return formats::writeRenderNodeImage(*store, image);
}

base::Result<void> MockDevice::unpauseImpl(int pid) {
    std::optional<base::Error> first;
    for (const DumpedContext& dc : dumped_[pid]) {
        auto r = unpauseAsking(root_, Context(root_, dc.id));
        if (!r.ok() && !first)
            first = std::move(r.error().addContext(base::strFormat(
                "while unpausing GPU 0x%04x (mock context %u)", dc.state.gpuId, dc.id)));
    }
    gates_.release(pid);
    if (first)
        return std::move(*first);
    return base::success();
}

base::Result<hal::PausedRelease> MockDevice::releasePausedImpl(int pid, int pidfd) {
    // With a pin (coordination/process_pin.h), what is read of /proc/<pid> counts only if the
    // paused process still holds its pid after the read.
    auto exited = [pidfd] { return pidfd >= 0 && !coordination::pinnedProcessAlive(pidfd); };
    if (pidfd >= 0 ? coordination::signalPinnedProcess(pidfd, 0) == -ESRCH
                   : kill(pid, 0) != 0 && errno == ESRCH)
        return hal::PausedRelease::Gone;
    auto held = filesHeldBy(pid, root_);
    if (!held.ok() && held.error().code() == base::ErrorCode::NotFound)
        return hal::PausedRelease::Gone; // it exited while we looked
    HAL_TRY(held);
    if (exited())
        return hal::PausedRelease::Gone; // the files listed may be a newcomer's
    bool released = false;
    for (uint32_t id : held->contexts) {
        Context ctx(root_, id);
        if (!ctx.pausedMarker())
            continue;
        auto state = ctx.load();
        if (state.ok() && state->restoreSession != 0)
            return base::makeError(
                base::ErrorCode::PhaseOrder,
                "process %d holds mock context %u of a restore that never resumed it (criu %d "
                "restored it and died, or is still restoring): the process is half-restored and "
                "must not run; kill it, and its GPU memory goes with it",
                pid, id, restoringCriuOf(state->restoreSession));
        HAL_TRY_CONTEXT(criuUnpause(root_, ctx), "while unpausing mock context %u", id);
        HAL_LOG_INFO("mock: context %u of process %d unpaused", id, pid);
        released = true;
    }
    // The gates a pause closed: the process's own and its descendants' (HeldGates::hold).
    std::vector<int> pids{pid};
    for (int child : descendantsOf(pid))
        pids.push_back(child);
    std::vector<TaskKey> keys;
    for (int p : pids) {
        auto key = taskKeyOf(p);
        keys.push_back(key.ok() ? *key : TaskKey{});
    }
    if (exited()) // the tasks just read may be a newcomer's
        return released ? hal::PausedRelease::Unpaused : hal::PausedRelease::Gone;
    for (size_t i = 0; i < pids.size(); ++i) {
        if (keys[i].pid == 0 || !callsHeld(root_, keys[i]))
            continue;
        HAL_TRY_CONTEXT(releaseCalls(root_, keys[i]), "while opening the call gate of process %d",
                        pids[i]);
        HAL_LOG_INFO("mock: call gate of process %d opened", pids[i]);
        released = true;
    }
    if (released)
        return hal::PausedRelease::Unpaused;
    return held->contexts.empty() ? hal::PausedRelease::NoGpu : hal::PausedRelease::NotPaused;
}

} // namespace mock
