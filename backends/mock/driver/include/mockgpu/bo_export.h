#pragma once
/// \file
/// Buffer objects handed from one process to another, the way a real driver hands them as
/// dma-buf fds: an fd that refers to the BO's memory, through which the checkpoint side reads it
/// and the restore side fills it, in whichever process holds the fd (parallel restore sends them
/// to criu's main process). Reads and writes honour the read-bo and write-bo faults.

#include "base/result.h"
#include "mockgpu/context.h"

#include <cstddef>
#include <span>
#include <string>

namespace mock {

/// An fd of BO `handle` of `ctx` (close-on-exec), writable for a restore.
base::Result<int> criuExportBo(const Context& ctx, uint32_t handle, bool writable);

/// Reads BO bytes through an exported fd (a read-bo fault at offset 0); `what` names the BO.
base::Result<void> criuReadBoFd(const std::string& root, int fd, uint64_t offset,
                                std::span<std::byte> out, const std::string& what);

/// Writes BO bytes through an exported fd (a write-bo fault at offset 0); `what` names the BO.
base::Result<void> criuWriteBoFd(const std::string& root, int fd, uint64_t offset,
                                 std::span<const std::byte> in, const std::string& what);

} // namespace mock
