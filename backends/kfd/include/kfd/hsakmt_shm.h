#pragma once
/// \file
/// libhsakmt's shared state between processes: the POSIX shared memory segment
/// `hsakmt_shared_mem` (its size and the magic in its first 4 bytes travel in criu_kfd) and the
/// named semaphore `hsakmt_semaphore` (glibc keeps it as `sem.hsakmt_semaphore`). Both live in a
/// directory that is /dev/shm on a real machine and a temporary directory in tests.

#include "base/result.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kfd {

/// Where libhsakmt's segment and semaphore live on a real machine.
inline constexpr const char* kDefaultShmDir = "/dev/shm";
/// File name of the segment.
inline constexpr const char* kHsakmtShmName = "hsakmt_shared_mem";
/// File name glibc gives the semaphore "/hsakmt_semaphore".
inline constexpr const char* kHsakmtSemName = "sem.hsakmt_semaphore";

/// Largest segment restored. libhsakmt's segment is its perf_shared_table (8 bytes); the size
/// comes from an image, and a larger one would only fill the machine's shared memory.
inline constexpr uint64_t kMaxHsakmtShmSize = 1 << 20;

/// Size and magic of the segment.
struct HsakmtShm {
    uint64_t size = 0;
    uint32_t magic = 0;
};

/// Reads the segment in `dir`; nullopt when there is none. The segment must be a regular file:
/// the directory is world-writable, so a symlink or a FIFO planted there is refused (never
/// followed, never waited on).
base::Result<std::optional<HsakmtShm>> readHsakmtShm(const std::string& dir);

/// Where the checkpointed process `pid` sees its /dev/shm, from criu (outside its mount
/// namespace): PROCROOT/PID/root/dev/shm.
std::string processShmDir(const std::string& procRoot, int pid);

/// Reads the segment of process `pid` as readHsakmtShm does, from its own /dev/shm
/// (processShmDir), resolved within its root (openat2 RESOLVE_IN_ROOT): a dump records the
/// process's segment, never the one in criu's /dev/shm, which any local user can create. Where
/// openat2 is refused (before Linux 5.6, or a seccomp filter), it walks dev, shm and the segment
/// from the process's root fd with O_NOFOLLOW, never by path, and refuses a link on the way.
base::Result<std::optional<HsakmtShm>> readProcessHsakmtShm(const std::string& procRoot, int pid);

/// Tests only: when set, readProcessHsakmtShm acts as if openat2 were refused.
extern bool hsakmtShmWithoutOpenat2;

/// Recreates the segment (unless one of that size exists) with `magic` in its first bytes, and
/// the semaphore (value 1) unless it exists. Refuses a size over kMaxHsakmtShmSize and, as
/// readHsakmtShm, anything but a regular file at either path.
base::Result<void> restoreHsakmtShm(const std::string& dir, const HsakmtShm& shm);

} // namespace kfd
