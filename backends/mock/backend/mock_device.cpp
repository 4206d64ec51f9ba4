#include "mock_device.h"

#include "bo_export.h"
#include "criu_ops.h"
#include "device_nodes.h"
#include "faults.h"
#include "state_codec.h"

#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"
#include "base/log.h"
#include "formats/packed_image.h"
#include "formats/topology_codec.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>

namespace mock {
namespace {

/// A BO through the fd the driver exports for it (the mock's dma-buf): the source of its bytes
/// at dump, their sink at restore. The fd is opened when first needed (or handed in) and closed
/// after the last byte, so a lane holds one BO fd at a time.
class BoFile final : public hal::ContentSource, public hal::ContentSink {
public:
    /// Opens BO `handle` of `ctx` when first used.
    BoFile(const std::string& root, const Context& ctx, uint32_t handle, uint64_t size,
           bool writable)
        : root_(root), ctx_(ctx), handle_(handle), size_(size), writable_(writable) {}
    /// Uses `fd` (owned), a BO handed over by a restored task.
    BoFile(const std::string& root, int fd, uint32_t handle, uint64_t size)
        : root_(root), handle_(handle), size_(size), writable_(true), fd_(fd) {}
    ~BoFile() override { closeFd(); }

    hal::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        HAL_TRY(openFd());
        HAL_TRY(criuReadBoFd(root_, fd_, offset, out, name()));
        return doneAt(offset + out.size());
    }
    hal::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        HAL_TRY(openFd());
        HAL_TRY(criuWriteBoFd(root_, fd_, offset, in, name()));
        return doneAt(offset + in.size());
    }

private:
    std::string name() const { return hal::strFormat("mock BO %u", handle_); }
    hal::Result<void> openFd() {
        if (fd_ < 0) {
            HAL_TRY_ASSIGN(fd_, criuExportBo(*ctx_, handle_, writable_));
        }
        return hal::success();
    }
    hal::Result<void> doneAt(uint64_t end) {
        if (end >= size_)
            closeFd();
        return hal::success();
    }
    void closeFd() {
        if (fd_ >= 0)
            close(fd_);
        fd_ = -1;
    }

    const std::string& root_;
    std::optional<Context> ctx_;
    uint32_t handle_;
    uint64_t size_;
    bool writable_;
    int fd_ = -1;
};

/// Whether `bo` is restored by importing the memory of the BO that owns its share key.
bool isFollower(const hal::DrmBoEntry& bo) { return bo.sharing && bo.sharing->follower; }

/// How messages name a BO of the mock.
std::string boWhat(const hal::DrmBoEntry& bo) {
    return hal::strFormat("BO %u (%llu bytes)", bo.handle, static_cast<unsigned long long>(bo.size));
}

/// The image of BO `index` of `image`, opened for a restore and checked against the BO's size.
std::function<hal::Result<hal::FramedImage>()> openBoImage(hal::ImageStore* store,
                                                           const std::string& name,
                                                           const hal::DrmBoEntry& bo) {
    return [store, name, handle = bo.handle, size = bo.size]() -> hal::Result<hal::FramedImage> {
        HAL_TRY_ASSIGN(hal::FramedImage file, hal::openContentsImage(*store, name));
        HAL_TRY(hal::checkContentsSize(file, size, hal::strFormat("BO %u holds", handle)));
        return file;
    };
}

/// A parallel-restore job of the mock: which render-node image, which GPUs, and for each BO (in
/// the order of the job's fds) its index, handle, size and recorded checksum.
struct MockJob {
    uint32_t id = 0;
    uint32_t srcMinor = 0;
    uint32_t srcGpu = 0;
    uint32_t dstGpu = 0;
    uint32_t context = 0;
    std::vector<std::pair<uint32_t, hal::DrmBoEntry>> bos;
};

constexpr const char* kJobMagic = "mock-contents 1";

std::string encodeJob(const MockJob& job) {
    std::ostringstream out;
    out << kJobMagic << "\n"
        << "file " << job.id << " " << job.srcMinor << " " << job.srcGpu << " " << job.dstGpu
        << " " << job.context << "\n";
    for (const auto& [index, bo] : job.bos) {
        out << "bo " << index << " " << bo.handle << " " << bo.size << " ";
        if (bo.checksum)
            out << (bo.checksum->kind == hal::DigestKind::Xxh3_64 ? "0 " : "1 ")
                << bo.checksum->value << "\n";
        else
            out << "- 0\n";
    }
    return out.str();
}

hal::Result<MockJob> decodeJob(const std::string& payload) {
    std::istringstream in(payload);
    std::string line;
    MockJob job;
    auto bad = [&] {
        return hal::makeError(hal::ErrorCode::Internal, "a malformed mock parallel-restore job: %s",
                              line.c_str());
    };
    if (!std::getline(in, line) || line != kJobMagic)
        return bad();
    std::string word;
    if (!std::getline(in, line))
        return bad();
    std::istringstream head(line);
    if (!(head >> word >> job.id >> job.srcMinor >> job.srcGpu >> job.dstGpu >> job.context) ||
        word != "file")
        return bad();
    while (std::getline(in, line)) {
        std::istringstream b(line);
        uint32_t index = 0;
        hal::DrmBoEntry bo;
        std::string kind;
        uint64_t value = 0;
        if (!(b >> word >> index >> bo.handle >> bo.size >> kind >> value) || word != "bo")
            return bad();
        if (kind == "0")
            bo.checksum = hal::ContentChecksum{hal::DigestKind::Xxh3_64, value};
        else if (kind == "1")
            bo.checksum = hal::ContentChecksum{hal::DigestKind::Fnv1a64, value};
        else if (kind != "-")
            return bad();
        job.bos.emplace_back(index, bo);
    }
    return job;
}

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
    // Unique enough among concurrent restores of one machine: pid and time. The pid stays
    // readable: the reaper frees what a restore whose criu died left behind.
    restoreSession_ = restoreSessionOf(
        getpid(),
        static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
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
    return hal::success();
}

hal::Result<void> MockDevice::writeTopologyOnce() {
    if (topologyWritten_)
        return hal::success();
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    HAL_TRY_ASSIGN(hal::Topology topo, readMachineTopology(root_));
    if (!dumpWithoutDeviceHooks_) {
        // criu 4.0+ paused and checkpointed every process before dumping any file: keep only
        // the GPUs they use, so a restore needs only those (a new pod may be given no others).
        std::set<int> used;
        for (const auto& [pid, contexts] : dumped_)
            for (const DumpedContext& dc : contexts)
                if (const hal::Node* gpu = topo.findGpu(dc.state.gpuId))
                    used.insert(gpu->renderMinor());
        topo = hal::usedGpusOnly(topo, used);
    }
    HAL_TRY_CONTEXT(hal::writeTopologyImage(*store, topo), "while writing %s",
                    hal::kTopologyImageName);
    topologyWritten_ = true;
    return hal::success();
}

hal::LaneOptions MockDevice::laneOptions(const std::string& gpu, std::span<std::byte> staging) {
    // The mock's device copy is a CPU copy (read/write of the driver's files), not a DMA engine:
    // slots of 2 MiB keep each chunk in the CPU's cache from the copy and its checksum to the
    // image I/O. Measured with real criu (bench.mock_throughput): 16 MiB slots made every byte go
    // through memory twice more (0.71 of cat at dump), 4 MiB ran no faster than 2 and held more
    // memory, 1 MiB and 512 KiB paid more per-chunk overhead.
    constexpr size_t kCpuCopySlot = 2 << 20;
    hal::LaneOptions options;
    options.gpu = gpu;
    options.holes = settings().contentHoles;
    options.staging = staging.first(std::min(staging.size(), kCpuCopySlot * options.slots));
    return options;
}

hal::Result<void> MockDevice::saveContents(const DumpedContext& dc, hal::RenderNodeImage& image) {
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    HAL_TRY_ASSIGN(const hal::IncrementalDump* increment, incrementalDump());
    HAL_TRY_ASSIGN(hal::CodecSpec codec, contentCodec());
    Context ctx(root_, dc.id);
    std::vector<std::unique_ptr<BoFile>> bos;
    std::vector<hal::DumpImage> files;
    std::vector<uint32_t> saved; // BO index of each file
    std::vector<hal::BoKey> keys;
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const hal::DrmBoEntry& bo = image.bos[i];
        if (isFollower(bo))
            continue; // its contents are its owner's
        saved.push_back(i);
        keys.push_back(hal::boKeyOf(dc.state.gpuId, bo));
        bos.push_back(std::make_unique<BoFile>(root_, ctx, bo.handle, bo.size, false));
        hal::DumpImage file;
        file.name =
            increment->contentsName(hal::drmPagesImageName(image.id, image.renderMinor, i), codec);
        file.create = [store, name = file.name, size = bo.size, codec] {
            return hal::createContentsImage(*store, name, size, codec);
        };
        file.pieces.push_back({bos.back().get(), nullptr, bo.size, boWhat(bo)});
        files.push_back(std::move(file));
    }
    hal::LaneOptions options = laneOptions(
        hal::strFormat("GPU 0x%04x (mock context %u)", dc.state.gpuId, dc.id), staging().span());
    HAL_TRY_ASSIGN(
        hal::FileIncrement chunks,
        hal::FileIncrement::attach(*increment, files, keys,
                                   hal::laneSlotSize(options.staging.size(), options.slots)));
    HAL_TRY(hal::runDumpLane(files, options));
    for (size_t f = 0; f < files.size(); ++f)
        image.bos[saved[f]].checksum = files[f].checksum;
    return chunks.writeRecord(*store, image.id);
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
    HAL_TRY(writeTopologyOnce());
    hal::RenderNodeImage image;
    image.id = file.id;
    image.gpuId = dc->state.gpuId;
    image.renderMinor = static_cast<uint32_t>(dc->state.renderMinor);
    Context ctx(root_, id);
    for (const BufferObject& bo : dc->state.bos) {
        hal::DrmBoEntry e;
        e.size = bo.size;
        e.allocFlags = bo.flags;
        e.preferredDomains = mockBoDomains(bo.flags);
        e.handle = bo.handle;
        e.isImport = bo.imported;
        e.vms.push_back(hal::DrmVmEntry{bo.gpuVa, bo.size, 0, bo.flags});
        HAL_TRY_ASSIGN(Context::BoMemory memory, ctx.boMemory(bo.handle));
        if (memory.holders > 1) {
            // Memory held by several BOs (of this process or others): the first BO of this dump
            // that holds it owns its contents; the others import it again at restore.
            auto [owner, first] = shareOwners_.emplace(memory.id, file.id);
            e.sharing = hal::BoSharing{memory.id, !first, first ? 0u : owner->second};
        }
        image.bos.push_back(e);
    }
    HAL_TRY(saveContents(*dc, image));
    image.privData = encodeRenderNodeState(RenderNodeState{id, dc->state});
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

hal::Result<hal::PausedRelease> MockDevice::releasePausedImpl(int pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return hal::PausedRelease::Gone;
    auto held = filesHeldBy(pid, root_);
    if (!held.ok() && held.error().code() == hal::ErrorCode::NotFound)
        return hal::PausedRelease::Gone; // it exited while we looked
    HAL_TRY(held);
    bool released = false;
    for (uint32_t id : held->contexts) {
        Context ctx(root_, id);
        if (!ctx.pausedMarker())
            continue;
        auto state = ctx.load();
        if (state.ok() && state->restoreSession != 0)
            return hal::makeError(
                hal::ErrorCode::PhaseOrder,
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
    for (int p : pids) {
        auto key = taskKeyOf(p);
        if (!key.ok() || !callsHeld(root_, *key))
            continue;
        HAL_TRY_CONTEXT(releaseCalls(root_, *key), "while opening the call gate of process %d", p);
        HAL_LOG_INFO("mock: call gate of process %d opened", p);
        released = true;
    }
    if (released)
        return hal::PausedRelease::Unpaused;
    return held->contexts.empty() ? hal::PausedRelease::NoGpu : hal::PausedRelease::NotPaused;
}

// ---------------------------------------------------------------------------------- restore

hal::Result<const MockDevice::MockImage*> MockDevice::imageOf(uint32_t id) {
    auto it = images_.find(id);
    if (it == images_.end()) {
        HAL_TRY_ASSIGN(hal::ImageStore * store, images());
        std::optional<MockImage> image;
        if (store->exists(hal::renderNodeImageName(id))) {
            auto read = hal::readRenderNodeImage(*store, id);
            if (!read.ok() && read.error().code() != hal::ErrorCode::NotFound)
                return std::move(read).error();
            std::optional<RenderNodeState> priv;
            if (read.ok() && (priv = decodeRenderNodeState(read->privData)))
                image = MockImage{std::move(read).value(), std::move(*priv)};
        }
        it = images_.emplace(id, std::move(image)).first;
    }
    return it->second ? &*it->second : nullptr;
}

hal::Result<bool> MockDevice::ownsImageImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const MockImage* image, imageOf(id));
    return image != nullptr;
}

hal::Result<void> MockDevice::restoreContents(const Context& ctx, const hal::RenderNodeImage& image,
                                              const std::string& gpu) {
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    HAL_TRY_ASSIGN(const hal::RestoreChain* chain, restoreChainOf(image.id));
    std::vector<std::unique_ptr<BoFile>> bos;
    std::vector<hal::RestoreImage> files;
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const hal::DrmBoEntry& bo = image.bos[i];
        if (isFollower(bo))
            continue;
        bos.push_back(std::make_unique<BoFile>(root_, ctx, bo.handle, bo.size, true));
        HAL_TRY_ASSIGN(hal::RestoreImage file,
                       restoreImageOf(*store, image.id, image.gpuId, image.renderMinor, i, bo,
                                      bos.back().get(), chain));
        files.push_back(std::move(file));
    }
    HAL_TRY(hal::runRestoreLane(files, laneOptions(gpu, staging().span())));
    return hal::success();
}

hal::Result<hal::RestoreImage> MockDevice::restoreImageOf(hal::ImageStore& store, uint32_t id,
                                                          uint32_t gpuId, uint32_t minor,
                                                          uint32_t index, const hal::DrmBoEntry& bo,
                                                          hal::ContentSink* sink,
                                                          const hal::RestoreChain* chain) {
    hal::RestoreImage file;
    file.name = hal::drmPagesImageName(id, minor, index);
    HAL_TRY(hal::nameRestoreImage(store, chain, file, hal::boKeyOf(gpuId, bo)));
    file.open = openBoImage(&store, file.name, bo);
    file.pieces.push_back({nullptr, sink, bo.size, boWhat(bo)});
    file.expected = bo.checksum;
    return file;
}

hal::Result<void> MockDevice::handOverContents(const Context& ctx, const hal::RenderNodeImage& image,
                                               uint32_t dstGpu) {
    MockJob job;
    job.id = image.id;
    job.srcMinor = image.renderMinor;
    job.srcGpu = image.gpuId;
    job.dstGpu = dstGpu;
    job.context = ctx.id();
    hal::ContentJob out;
    out.lane = hal::strFormat("GPU 0x%04x", dstGpu);
    out.lanes = sourceTopology_ ? static_cast<uint32_t>(sourceTopology_->gpus().size()) : 1;
    struct Fds {
        std::vector<int> fds;
        ~Fds() {
            for (int fd : fds)
                close(fd);
        }
    } exported;
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        if (isFollower(image.bos[i]))
            continue;
        HAL_TRY_ASSIGN_CONTEXT(int fd, criuExportBo(ctx, image.bos[i].handle, true),
                               "exporting BO %u for the parallel restore", image.bos[i].handle);
        exported.fds.push_back(fd);
        job.bos.emplace_back(i, image.bos[i]);
    }
    out.payload = encodeJob(job);
    out.fds = exported.fds;
    HAL_TRY_CONTEXT(contentHandoff()->send(out),
                    "handing the BO contents of %s to criu's main process",
                    hal::renderNodeImageName(image.id).c_str());
    HAL_LOG_INFO("mock: BO contents of %s (%zu BOs) handed to criu's main process",
                 hal::renderNodeImageName(image.id).c_str(), job.bos.size());
    return hal::success();
}

hal::Result<void> MockDevice::restoreHandedContentsImpl(hal::ContentJob& handed,
                                                        std::span<std::byte> staging) {
    std::vector<std::unique_ptr<BoFile>> bos;
    std::vector<int> fds = std::move(handed.fds);
    handed.fds.clear();
    auto job = decodeJob(handed.payload);
    if (!job.ok() || job->bos.size() != fds.size()) {
        for (int fd : fds)
            close(fd);
        if (!job.ok())
            return std::move(job).error();
        return hal::makeError(hal::ErrorCode::Internal,
                              "a mock parallel-restore job lists %zu BOs and carries %zu fds",
                              job->bos.size(), fds.size());
    }
    for (size_t i = 0; i < fds.size(); ++i)
        bos.push_back(std::make_unique<BoFile>(root_, fds[i], job->bos[i].second.handle,
                                               job->bos[i].second.size));
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    HAL_TRY_ASSIGN(const hal::RestoreChain* chain, restoreChainOf(job->id));
    std::vector<hal::RestoreImage> files;
    for (size_t i = 0; i < job->bos.size(); ++i) {
        const auto& [index, bo] = job->bos[i];
        HAL_TRY_ASSIGN(hal::RestoreImage file,
                       restoreImageOf(*store, job->id, job->srcGpu, job->srcMinor, index, bo,
                                      bos[i].get(), chain));
        files.push_back(std::move(file));
    }
    HAL_TRY(hal::runRestoreLane(
        files, laneOptions(hal::strFormat("GPU 0x%04x (from 0x%04x, mock context %u)", job->dstGpu,
                                          job->srcGpu, job->context),
                           staging)));
    return hal::success();
}

hal::Result<int> MockDevice::restoreFileImpl(uint32_t id) {
    HAL_TRY_ASSIGN(const MockImage* mockImage, imageOf(id));
    if (!mockImage)
        return hal::makeError(hal::ErrorCode::NotFound, "no mock GPU image for file id %u", id);
    const hal::RenderNodeImage* image = &mockImage->image;
    HAL_TRY_ASSIGN(hal::ImageStore * store, images());
    if (!sourceTopology_) {
        HAL_TRY_ASSIGN(sourceTopology_, hal::readTopologyImage(*store));
    }
    // An incremental image's parents are checked before any GPU is touched.
    HAL_TRY(restoreChainOf(id));
    if (restoreDevDir_.empty())
        restoreDevDir_ = mockImage->priv.state.devDir;
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
    ContextState state = mockImage->priv.state;
    if (state.bos.size() != image->bos.size())
        return hal::makeError(hal::ErrorCode::Image,
                              "%s is inconsistent: %zu BOs listed, its context state has %zu",
                              what.c_str(), image->bos.size(), state.bos.size());
    // The memory a follower imports must be in the checkpoint, or the import would wait for an
    // owner that never comes.
    HAL_TRY(hal::checkShareOwnersPresent(*store, *image));
    for (const hal::DrmBoEntry& bo : image->bos) {
        auto known = std::find_if(state.bos.begin(), state.bos.end(),
                                  [&](const BufferObject& b) { return b.handle == bo.handle; });
        if (known == state.bos.end() || known->size != bo.size)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s is inconsistent: BO %u does not match its context state",
                                  what.c_str(), bo.handle);
        // Who imports is decided by the image: the owner of shared memory allocates it again.
        known->imported = isFollower(bo);
    }
    HAL_TRY(ensureDeviceNode(*dstNode));
    HAL_TRY_ASSIGN_CONTEXT(Context ctx,
                           criuRestore(root_, state, dstNode->gpuId, dstNode->renderMinor(),
                                       hostPid(), restoreSession_),
                           "recreating mock GPU context of GPU 0x%04x on GPU 0x%04x",
                           image->gpuId, dstNode->gpuId);
    auto shared = shareMemory(ctx, *image);
    if (!shared.ok()) {
        ctx.destroy();
        return std::move(shared.error().addContext(
            hal::strFormat("restoring mock GPU 0x%04x -> 0x%04x", image->gpuId, dstNode->gpuId)));
    }
    auto restored = contentHandoff()
                        ? handOverContents(ctx, *image, dstNode->gpuId)
                        : restoreContents(ctx, *image,
                                          hal::strFormat("GPU 0x%04x (from 0x%04x, mock context %u)",
                                                         dstNode->gpuId, image->gpuId, ctx.id()));
    if (!restored.ok()) {
        ctx.destroy();
        return std::move(restored.error().addContext(
            hal::strFormat("restoring mock GPU 0x%04x -> 0x%04x", image->gpuId, dstNode->gpuId)));
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

hal::Result<void> MockDevice::shareMemory(const Context& ctx, const hal::RenderNodeImage& image) {
    hal::ShareExchange& exchange = shareExchange();
    // Owners first, so that a file holding both ends of some memory finds its own.
    for (const hal::DrmBoEntry& bo : image.bos) {
        if (!bo.sharing || bo.sharing->follower)
            continue;
        HAL_TRY_ASSIGN_CONTEXT(int fd, criuExportBo(ctx, bo.handle, true),
                               "exporting shared BO %u", bo.handle);
        auto published = exchange.publish(bo.sharing->key, fd);
        close(fd);
        HAL_TRY_CONTEXT(std::move(published), "publishing shared BO %u", bo.handle);
    }
    for (const hal::DrmBoEntry& bo : image.bos) {
        if (!isFollower(bo))
            continue;
        std::string what = hal::strFormat("BO %u of %s", bo.handle,
                                          hal::renderNodeImageName(image.id).c_str());
        HAL_TRY_ASSIGN(int fd, exchange.fetch(bo.sharing->key, hal::kShareFetchTimeout, what));
        auto imported = criuImportBo(root_, ctx, bo.handle, fd);
        close(fd);
        HAL_TRY_CONTEXT(std::move(imported), "importing the shared memory of %s", what.c_str());
    }
    return hal::success();
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
    removeUnfinishedContexts(root_, restoreSession_, false); // of tasks killed while making them
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

std::string MockDevice::restoreDevDir() const {
    return settings().devRoot.empty() ? restoreDevDir_ : settings().devRoot;
}

hal::Result<std::optional<std::set<uint32_t>>> MockDevice::usableGpuIdsImpl() {
    std::string dir = restoreDevDir();
    if (dir.empty())
        return std::optional<std::set<uint32_t>>();
    HAL_TRY_ASSIGN(hal::Topology topo, localTopologyImpl());
    std::set<uint32_t> usable;
    std::vector<std::string> leftOut;
    for (const hal::Node* gpu :
         visibleGpus(deviceNodeCalls(), topo, dir, config_.deviceRdev, absentNodes(), &leftOut))
        usable.insert(gpu->gpuId);
    for (const std::string& why : leftOut)
        HAL_LOG_INFO("mock: not this process's GPU: %s", why.c_str());
    return std::optional<std::set<uint32_t>>(std::move(usable));
}

hal::Result<void> MockDevice::ensureDeviceNode(const hal::Node& gpu) {
    std::string dir = restoreDevDir();
    if (dir.empty())
        return hal::success();
    return giveRenderNode(deviceNodeCalls(), dir, gpu.renderMinor(), gpu.gpuId);
}

std::string MockDevice::deviceViewImpl() {
    std::string dir = restoreDevDir();
    return dir.empty() ? "" : describeDeviceView(dir);
}

} // namespace mock
