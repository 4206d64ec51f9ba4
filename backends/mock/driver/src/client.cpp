#include "mockgpu/client.h"

#include "mockgpu/call_gate.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/device_nodes.h"
#include "mockgpu/faults.h"
#include "mockgpu/machine.h"
#include "mockgpu/reaper.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

namespace mock {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr auto kPausedTimeout = std::chrono::seconds(120);
constexpr int kLockTimeoutMs = 30000;

/// The context an fd refers to, found from the fd alone.
struct FdTarget {
    std::string root;
    uint32_t id = 0;
};

base::Result<FdTarget> targetOfFd(int fd) {
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    char buf[4096];
    ssize_t n = readlink(link, buf, sizeof(buf) - 1);
    if (n < 0)
        return base::makeErrnoError(base::ErrorCode::InvalidArgument, errno,
                                    "fd %d is not an open mock GPU device", fd);
    std::string path(buf, static_cast<size_t>(n));
    if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0)
        return base::makeError(base::ErrorCode::NotPresent,
                               "the mock GPU device of fd %d was reset (%s)", fd, path.c_str());
    size_t at = path.rfind("/state/contexts/");
    if (at == std::string::npos)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "fd %d (%s) is not a mock GPU device", fd, path.c_str());
    FdTarget t;
    t.root = path.substr(0, at);
    t.id = contextIdOfNodePath(t.root, path);
    if (!t.id)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "fd %d (%s) is not a mock GPU device", fd, path.c_str());
    return t;
}

/// One driver call: entered at the process's call gate (so a checkpoint never freezes the process
/// inside it, see call_gate.h), then holds the context's lock (so concurrent calls on one context
/// take turns) and the context's state. Waits, holding nothing, while the queues are paused.
class DriverCall {
public:
    /// Enters the driver for `fd` to make the call `what`; waits while the context is paused
    /// unless `evenIfPaused`.
    base::Result<void> enter(int fd, bool evenIfPaused, const char* what) {
        auto deadline = std::chrono::steady_clock::now() + kPausedTimeout;
        for (;;) {
            HAL_TRY_ASSIGN(FdTarget t, targetOfFd(fd));
            HAL_TRY(gate_.enter(t.root, base::strFormat("%s on context %u", what, t.id)));
            ctx_.emplace(t.root, t.id);
            root_ = t.root;
            if (evenIfPaused || !ctx_->pausedMarker()) {
                auto locked = lock_.acquire(ctx_->dir(), kLockTimeoutMs);
                // The fd may have been restored onto another context while we looked: a thread
                // that waited at the gate across a checkpoint resolved its fd before the restore,
                // and the context it found then may be gone (bench.load: "context 13 is gone")
                // or another process's now.
                HAL_TRY_ASSIGN(FdTarget again, targetOfFd(fd));
                if (again.root != t.root || again.id != t.id) {
                    lock_.release();
                    continue;
                }
                HAL_TRY(std::move(locked));
                if (evenIfPaused || !ctx_->pausedMarker()) {
                    HAL_TRY_ASSIGN(state_, ctx_->load());
                    return base::success();
                }
                lock_.release();
            }
            gate_.leave(); // a paused context may stay so across a checkpoint: wait outside
            if (std::chrono::steady_clock::now() > deadline)
                return base::makeError(base::ErrorCode::Kernel,
                                       "mock GPU queues of context %u stayed paused for %lld s: a "
                                       "checkpoint or restore did not resume them",
                                       t.id, static_cast<long long>(kPausedTimeout.count()));
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    const std::string& root() const { return root_; }
    Context& ctx() { return *ctx_; }
    ContextState& state() { return state_; }
    base::Result<void> save() { return ctx_->save(state_); }

private:
    GateCall gate_; // declared first: left last, after the lock is released
    ContextLock lock_;
    std::string root_;
    std::optional<Context> ctx_;
    ContextState state_;
};

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

base::Result<const BufferObject*> boOf(const ContextState& s, uint32_t handle) {
    const BufferObject* bo = s.findBo(handle);
    if (!bo)
        return base::makeError(base::ErrorCode::InvalidArgument, "no buffer object %u", handle);
    return bo;
}

base::Result<void> checkRange(const BufferObject& bo, uint64_t offset, size_t len) {
    if (offset > bo.size || len > bo.size - offset)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "range %llu+%zu is outside buffer object %u of %llu bytes",
                               static_cast<unsigned long long>(offset), len, bo.handle,
                               static_cast<unsigned long long>(bo.size));
    return base::success();
}

/// An error when [gpuVa, gpuVa + size) runs past the address space or overlaps a BO of `s`.
base::Result<void> checkVaFree(const ContextState& s, uint64_t gpuVa, uint64_t size) {
    if (gpuVa > UINT64_MAX - size)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "GPU VA 0x%llx+%llu runs past the end of the address space",
                               static_cast<unsigned long long>(gpuVa),
                               static_cast<unsigned long long>(size));
    for (const BufferObject& bo : s.bos)
        if (gpuVa < bo.gpuVa + bo.size && bo.gpuVa < gpuVa + size)
            return base::makeError(base::ErrorCode::InvalidArgument,
                                   "GPU VA 0x%llx+%llu overlaps buffer object %u",
                                   static_cast<unsigned long long>(gpuVa),
                                   static_cast<unsigned long long>(size), bo.handle);
    return base::success();
}

/// The "GPU kernels" the queues run, on 64-bit words, a chunk at a time.
base::Result<void> execute(Context& ctx, const ContextState& s, const Command& cmd) {
    HAL_TRY_ASSIGN(const BufferObject* dst, boOf(s, cmd.dst));
    const BufferObject* src = nullptr;
    if (cmd.op == Command::Op::Mix) {
        HAL_TRY_ASSIGN(src, boOf(s, cmd.src));
        if (src->size < dst->size)
            return base::makeError(base::ErrorCode::InvalidArgument,
                                   "mix: source BO %u is smaller than destination BO %u",
                                   src->handle, dst->handle);
    }
    std::vector<uint64_t> a(kChunk / 8), b(kChunk / 8);
    for (uint64_t off = 0; off < dst->size; off += kChunk) {
        size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, dst->size - off));
        size_t words = len / 8;
        auto aBytes = std::as_writable_bytes(std::span(a)).first(len);
        if (cmd.op == Command::Op::Fill) {
            for (size_t i = 0; i < words; ++i)
                a[i] = splitmix64(cmd.seed + (off / 8) + i);
        } else {
            HAL_TRY(ctx.readBo(dst->handle, off, aBytes));
            HAL_TRY(ctx.readBo(src->handle, off, std::as_writable_bytes(std::span(b)).first(len)));
            for (size_t i = 0; i < words; ++i) {
                uint64_t x = a[i] * 0x5851f42d4c957f2dull + b[i] + cmd.seed;
                a[i] = (x << 13) | (x >> 51);
            }
        }
        HAL_TRY(ctx.writeBo(dst->handle, off, aBytes));
    }
    return base::success();
}

} // namespace

base::Result<int> openDevice(const std::string& rootIn, unsigned gpuIndex,
                             const std::string& devDir) {
    std::string root = canonicalRoot(rootIn);
    GateCall gate;
    auto entered = gate.enter(root, base::strFormat("open GPU %u", gpuIndex));
    HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root)); // names a root that is no machine
    if (!entered.ok())
        return std::move(entered).error();
    HAL_TRY_ASSIGN(topology::Topology topo, readMachineTopology(root));
    auto gpus = devDir.empty() ? topo.gpus()
                               : visibleGpus(topology::systemDeviceNodeCalls(), topo, devDir,
                                             cfg.deviceRdev, topology::AbsentNode::Report);
    if (gpuIndex >= gpus.size()) {
        if (!devDir.empty())
            return base::makeError(base::ErrorCode::NotFound,
                                   "GPU index %u: this process sees %zu of the %zu GPUs of mock "
                                   "machine %s (%s)",
                                   gpuIndex, gpus.size(), topo.gpus().size(), root.c_str(),
                                   describeDeviceView(devDir).c_str());
        return base::makeError(base::ErrorCode::NotFound,
                               "mock machine %s has %zu GPUs; GPU index %u does not exist",
                               root.c_str(), gpus.size(), gpuIndex);
    }
    const topology::Node* gpu = gpus[gpuIndex];
    (void)reapOrphanedContexts(root); // as a kernel would have when their last fds closed
    ContextState s;
    s.gpuId = s.userGpuId = gpu->gpuId;
    s.renderMinor = gpu->renderMinor();
    s.ownerPid = hostPid();
    s.devDir = devDir;
    // Held until the node is open: the reaper skips a locked context.
    ContextLock opening;
    HAL_TRY_ASSIGN(Context ctx,
                   createContext(root, cfg.deviceRdev, s.renderMinor, 0,
                                 [&](const Context& staged) -> base::Result<void> {
                                     HAL_TRY(opening.acquire(staged.dir(), kLockTimeoutMs));
                                     return staged.save(s);
                                 }));
    int fd = open(ctx.nodePath(s.renderMinor).c_str(), O_RDWR);
    if (fd < 0) {
        int e = errno;
        ctx.destroy();
        return base::makeErrnoError(base::ErrorCode::Io, e, "cannot open mock device node %s",
                                    ctx.nodePath(s.renderMinor).c_str());
    }
    return fd;
}

base::Result<void> closeDevice(int fd) {
    auto target = targetOfFd(fd);
    if (!target.ok()) {
        close(fd);
        return std::move(target).error();
    }
    GateCall gate;
    auto entered = gate.enter(target->root, base::strFormat("close context %u", target->id));
    close(fd);
    if (!entered.ok())
        return std::move(entered).error();
    Context(target->root, target->id).destroy();
    return base::success();
}

base::Result<uint32_t> allocBo(int fd, uint64_t size, uint32_t flags, uint64_t gpuVa) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "alloc"));
    HAL_TRY(checkFault(call.root(), "alloc"));
    if (size == 0 || size % 8)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "buffer size %llu is not a positive multiple of 8",
                               static_cast<unsigned long long>(size));
    ContextState& s = call.state();
    HAL_TRY_ASSIGN(uint64_t budget, gpuBudget(call.root(), s.gpuId));
    HAL_TRY_ASSIGN(uint64_t used, gpuMemoryInUse(call.root(), s.gpuId));
    if (!fitsBudget(used, size, budget))
        return base::makeErrnoError(base::ErrorCode::OutOfMemory, ENOMEM,
                                    "mock GPU 0x%04x: %llu bytes requested, %llu of %llu in use",
                                    s.gpuId, static_cast<unsigned long long>(size),
                                    static_cast<unsigned long long>(used),
                                    static_cast<unsigned long long>(budget));
    HAL_TRY(checkVaFree(s, gpuVa, size));
    BufferObject bo{s.nextHandle++, size, gpuVa, flags};
    HAL_TRY(call.ctx().createBoData(bo.handle, size));
    s.bos.push_back(bo);
    HAL_TRY(call.save());
    return bo.handle;
}

base::Result<void> writeBo(int fd, uint32_t handle, uint64_t offset,
                           std::span<const std::byte> in) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "write-bo"));
    HAL_TRY_ASSIGN(const BufferObject* bo, boOf(call.state(), handle));
    HAL_TRY(checkRange(*bo, offset, in.size()));
    return call.ctx().writeBo(handle, offset, in);
}

base::Result<void> readBo(int fd, uint32_t handle, uint64_t offset, std::span<std::byte> out) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "read-bo"));
    HAL_TRY_ASSIGN(const BufferObject* bo, boOf(call.state(), handle));
    HAL_TRY(checkRange(*bo, offset, out.size()));
    return call.ctx().readBo(handle, offset, out);
}

base::Result<int> exportBo(int fd, uint32_t handle) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "export"));
    HAL_TRY(boOf(call.state(), handle));
    return call.ctx().openBo(handle, true);
}

base::Result<uint32_t> importBo(int fd, int dmabuf, uint64_t gpuVa) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "import"));
    struct stat st {};
    if (fstat(dmabuf, &st) != 0 || !S_ISREG(st.st_mode))
        return base::makeErrnoError(base::ErrorCode::InvalidArgument, errno ? errno : EBADF,
                                    "fd %d is not a dma-buf of a mock GPU BO", dmabuf);
    HAL_TRY_ASSIGN(std::optional<BufferObject> exported,
                   findBoByMemory(call.root(), static_cast<uint64_t>(st.st_ino)));
    if (!exported)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "fd %d is not a dma-buf of a BO of mock machine %s", dmabuf,
                               call.root().c_str());
    ContextState& s = call.state();
    HAL_TRY(checkVaFree(s, gpuVa, exported->size));
    BufferObject bo{s.nextHandle++, exported->size, gpuVa, exported->flags, true};
    HAL_TRY(call.ctx().linkBoData(bo.handle, dmabuf));
    s.bos.push_back(bo);
    HAL_TRY(call.save());
    return bo.handle;
}

base::Result<uint32_t> createQueue(int fd) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "create-queue"));
    Queue q;
    q.id = call.state().nextQueue++;
    call.state().queues.push_back(q);
    HAL_TRY(call.save());
    return q.id;
}

base::Result<uint32_t> createEvent(int fd) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "create-event"));
    Event e;
    e.id = call.state().nextEvent++;
    call.state().events.push_back(e);
    HAL_TRY(call.save());
    return e.id;
}

base::Result<void> submit(int fd, uint32_t queue, const Command& command, uint32_t event) {
    DriverCall call;
    HAL_TRY(call.enter(fd, false, "submit"));
    HAL_TRY(checkFault(call.root(), "submit"));
    ContextState& s = call.state();
    Queue* q = s.findQueue(queue);
    Event* e = s.findEvent(event);
    if (!q || !e)
        return base::makeError(base::ErrorCode::InvalidArgument, "no %s %u", q ? "event" : "queue",
                               q ? event : queue);
    q->submitted++;
    HAL_TRY(execute(call.ctx(), s, command));
    q->completed++;
    e->signals++;
    return call.save();
}

base::Result<ContextState> queryContext(int fd) {
    DriverCall call;
    HAL_TRY(call.enter(fd, true, "query"));
    return call.state();
}

} // namespace mock
