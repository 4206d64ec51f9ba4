#include "mockgpu/criu_ops.h"

#include "mockgpu/faults.h"
#include "mockgpu/machine.h"

#include <fcntl.h>
#include <unistd.h>

namespace mock {
namespace {

base::Result<ContextState> loadChecked(const Context& ctx) {
    auto s = ctx.load();
    if (!s.ok())
        return std::move(s.error().addContext(base::strFormat("mock context %u", ctx.id())));
    return s;
}

} // namespace

/// Pausing waits for a running driver call to end; later steps find the task stopped by criu.
constexpr int kPauseLockTimeoutMs = 10000;
constexpr int kStoppedLockTimeoutMs = 2000;

/// Pausing takes the context's lock, so a driver call in progress ends first, then sets the
/// `paused` marker. Unpausing removes the marker first and needs no lock: a task stopped by criu
/// inside a driver call still holds the lock, and must never be left paused because of it. The
/// state file's copy of the flag (and the restore session) is updated when the lock is free.
static base::Result<void> setPaused(const Context& ctx, bool paused, int lockTimeoutMs) {
    if (!paused)
        HAL_TRY(ctx.setPausedMarker(false));
    ContextLock lock;
    auto locked = lock.acquire(ctx.dir(), paused ? lockTimeoutMs : 100);
    if (!locked.ok()) {
        if (paused)
            return std::move(locked).error();
        return base::success();
    }
    HAL_TRY_ASSIGN(ContextState s, loadChecked(ctx));
    s.paused = paused;
    if (!paused)
        s.restoreSession = 0;
    if (paused)
        HAL_TRY(ctx.setPausedMarker(true));
    return ctx.save(s);
}

base::Result<void> criuPause(const std::string& root, const Context& ctx) {
    HAL_TRY(checkFault(root, "pause"));
    return setPaused(ctx, true, kPauseLockTimeoutMs);
}

base::Result<ContextState> criuCheckpoint(const std::string& root, const Context& ctx) {
    HAL_TRY(checkFault(root, "checkpoint"));
    ContextLock lock;
    HAL_TRY(lock.acquire(ctx.dir(), kStoppedLockTimeoutMs));
    HAL_TRY_ASSIGN(ContextState s, loadChecked(ctx));
    if (!ctx.pausedMarker())
        return base::makeError(base::ErrorCode::PhaseOrder,
                               "mock context %u checkpointed while its queues run", ctx.id());
    return s;
}

base::Result<void> criuReadBo(const std::string& root, const Context& ctx, uint32_t handle,
                              uint64_t offset, std::span<std::byte> out) {
    if (offset == 0)
        HAL_TRY(checkFault(root, "read-bo"));
    return ctx.readBo(handle, offset, out);
}

base::Result<void> criuUnpause(const std::string& root, const Context& ctx) {
    HAL_TRY(checkFault(root, "unpause"));
    return setPaused(ctx, false, kPauseLockTimeoutMs);
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) {
    uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

base::Result<uint64_t> gpuMemoryInUse(const std::string& root, uint32_t gpuId) {
    HAL_TRY_ASSIGN(auto contexts, listContexts(root));
    uint64_t used = 0;
    for (const Context& c : contexts) {
        auto s = c.load();
        if (!s.ok() || s->gpuId != gpuId)
            continue;
        for (const BufferObject& bo : s->bos)
            if (!bo.imported) // counted where it was allocated
                used = saturatingAdd(used, bo.size);
    }
    return used;
}

base::Result<Context> criuRestore(const std::string& root, const ContextState& snapshot,
                                  uint32_t gpuId, int renderMinor, int ownerPid, uint64_t session) {
    HAL_TRY(checkFault(root, "restore"));
    HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
    uint64_t need = 0;
    for (const BufferObject& bo : snapshot.bos)
        if (!bo.imported)
            need = saturatingAdd(need, bo.size);
    HAL_TRY_ASSIGN(uint64_t budget, gpuBudget(root, gpuId));
    HAL_TRY_ASSIGN(uint64_t used, gpuMemoryInUse(root, gpuId));
    if (!fitsBudget(used, need, budget))
        return base::makeErrnoError(base::ErrorCode::OutOfMemory, ENOMEM,
                                    "mock GPU 0x%04x cannot hold the restored buffers: %llu bytes "
                                    "needed, %llu of %llu in use",
                                    gpuId, static_cast<unsigned long long>(need),
                                    static_cast<unsigned long long>(used),
                                    static_cast<unsigned long long>(budget));
    ContextState s = snapshot;
    s.gpuId = gpuId;
    s.renderMinor = renderMinor;
    s.ownerPid = ownerPid;
    s.restoreSession = session;
    s.paused = true;
    // Made whole before it appears: a restore that fails kills its tasks wherever they are, and
    // the restore's clean-up finds every context it made by its session.
    return createContext(root, cfg.deviceRdev, renderMinor, session,
                         [&](const Context& staged) -> base::Result<void> {
                             HAL_TRY(staged.setPausedMarker(true));
                             for (const BufferObject& bo : s.bos)
                                 if (!bo.imported) // criuImportBo links its memory
                                     HAL_TRY(staged.createBoData(bo.handle, bo.size));
                             return staged.save(s);
                         });
}

base::Result<void> criuImportBo(const std::string& root, const Context& ctx, uint32_t handle,
                                int memoryFd) {
    HAL_TRY(checkFault(root, "import"));
    return ctx.linkBoData(handle, memoryFd);
}

base::Result<void> criuWriteBo(const std::string& root, const Context& ctx, uint32_t handle,
                               uint64_t offset, std::span<const std::byte> in) {
    if (offset == 0)
        HAL_TRY(checkFault(root, "write-bo"));
    return ctx.writeBo(handle, offset, in);
}

base::Result<void> criuResume(const std::string& root, const Context& ctx) {
    HAL_TRY(checkFault(root, "resume"));
    return setPaused(ctx, false, kPauseLockTimeoutMs);
}

} // namespace mock
