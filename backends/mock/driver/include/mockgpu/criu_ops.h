#pragma once
/// \file
/// The checkpoint/restore side of the mock driver, as the mock backend calls it (the part a real
/// driver implements behind its CRIU ioctl). Every operation honours fault injection.

#include "base/result.h"
#include "mockgpu/context.h"

#include <cstddef>
#include <span>
#include <string>

namespace mock {

/// Stops the context's queues.
base::Result<void> criuPause(const std::string& root, const Context& ctx);
/// The state of a paused context (BOs, queues, events).
base::Result<ContextState> criuCheckpoint(const std::string& root, const Context& ctx);
/// Reads BO bytes for a checkpoint.
base::Result<void> criuReadBo(const std::string& root, const Context& ctx, uint32_t handle,
                              uint64_t offset, std::span<std::byte> out);
/// Lets the context's queues run again after a checkpoint.
base::Result<void> criuUnpause(const std::string& root, const Context& ctx);
/// Recreates a context on GPU `gpuId` from a checkpointed state, paused, owned by `ownerPid` and
/// marked with the restore's `session`. Checks the GPU's memory budget first; on failure nothing
/// is left behind. BOs marked `imported` get no memory here: criuImportBo gives them theirs.
base::Result<Context> criuRestore(const std::string& root, const ContextState& snapshot,
                                  uint32_t gpuId, int renderMinor, int ownerPid, uint64_t session);
/// Gives imported BO `handle` of a restored context the memory behind `memoryFd` (an exported
/// BO of this restore, from any process).
base::Result<void> criuImportBo(const std::string& root, const Context& ctx, uint32_t handle,
                                int memoryFd);
/// Writes BO bytes during a restore.
base::Result<void> criuWriteBo(const std::string& root, const Context& ctx, uint32_t handle,
                               uint64_t offset, std::span<const std::byte> in);
/// Lets a restored context run (and ends its restore session).
base::Result<void> criuResume(const std::string& root, const Context& ctx);

/// Bytes of BOs allocated on a GPU by every context of the machine.
base::Result<uint64_t> gpuMemoryInUse(const std::string& root, uint32_t gpuId);

/// a + b, or UINT64_MAX where the sum would wrap: sizes come from callers and snapshots, and a
/// wrapped sum would slip under any budget.
uint64_t saturatingAdd(uint64_t a, uint64_t b);

/// Whether `need` more bytes fit beside `used` in `budget`, without wrap-around.
inline bool fitsBudget(uint64_t used, uint64_t need, uint64_t budget) {
    return need <= budget && used <= budget - need;
}

} // namespace mock
