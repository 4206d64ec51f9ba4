#pragma once
/// \file
/// The user side of the mock GPU: what a process linked against the mock "runtime" calls. Each
/// call is an "ioctl" on the device fd: it finds the context through the fd alone, the way a
/// driver finds its file, and waits while the context's queues are paused by a checkpoint.

#include "base/result.h"
#include "mockgpu/context.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mock {

/// Opens the `gpuIndex`-th GPU (0-based, topology order) of the mock machine at `root` as a new
/// context; returns the fd of its device node (O_CLOEXEC not set: children may inherit it).
/// With `devDir` (the device directory this process sees, "/dev" in a pod), the index counts
/// only the GPUs whose nodes are there (device_nodes.h), as ROCm enumerates the visible ones,
/// and the context records `devDir` for the restore.
base::Result<int> openDevice(const std::string& root, unsigned gpuIndex,
                             const std::string& devDir = "");
/// Destroys the context behind `fd` and closes it.
base::Result<void> closeDevice(int fd);

/// Allocates a BO; ENOMEM-like OutOfMemory error beyond the GPU's budget.
base::Result<uint32_t> allocBo(int fd, uint64_t size, uint32_t flags, uint64_t gpuVa);
/// Copies bytes into a BO.
base::Result<void> writeBo(int fd, uint32_t handle, uint64_t offset, std::span<const std::byte> in);
/// Copies bytes out of a BO.
base::Result<void> readBo(int fd, uint32_t handle, uint64_t offset, std::span<std::byte> out);
/// Exports BO `handle` as a dma-buf: an fd of its memory (close-on-exec) that any process may
/// hold, pass on (SCM_RIGHTS, pidfd_getfd) and import. Close it once imported: a mock dma-buf fd
/// is a file of the machine's state, which a checkpoint of its holder would record by path.
base::Result<int> exportBo(int fd, uint32_t handle);
/// Imports the BO memory behind `dmabuf` (from exportBo, in this process or another, on any GPU
/// of the machine) into the context behind `fd` at GPU VA `gpuVa`: a new handle for the same
/// memory, with the exporter's size and flags; writes through either are seen by both.
base::Result<uint32_t> importBo(int fd, int dmabuf, uint64_t gpuVa);
/// Creates a queue; returns its id.
base::Result<uint32_t> createQueue(int fd);
/// Creates an event; returns its id.
base::Result<uint32_t> createEvent(int fd);

/// A command a queue executes.
struct Command {
    enum class Op { Fill, Mix } op = Op::Fill;
    uint32_t dst = 0;  ///< BO written
    uint32_t src = 0;  ///< BO read (Mix)
    uint64_t seed = 0; ///< Fill seed / Mix step
};

/// Runs `command` on queue `queue` and signals `event` when done. Blocks while paused.
base::Result<void> submit(int fd, uint32_t queue, const Command& command, uint32_t event);

/// The context's state as the process may see it (user gpu_id, queues, events, BOs).
base::Result<ContextState> queryContext(int fd);

} // namespace mock
