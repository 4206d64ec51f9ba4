#pragma once
/// \file
/// How mockgpu-workload reports the end of a run: the checksum line, and for a run of several
/// processes (--fork, --ranks) each process's own checksum and, when --stop-file ended it, the step
/// it stopped after. Each process's checksum depends only on the arguments and its step count, so a
/// test compares it with that process's line in an uninterrupted run of as many steps.

#include <cstdint>
#include <string>
#include <vector>

namespace workload {

/// What a process of the tree hands its parent as it ends (as bytes, over a pipe or a socket).
struct ProcessEnd {
    uint64_t checksum = 0;
    uint32_t stoppedAfter = 0; ///< the step --stop-file ended it after (0: it ran every step)
    uint32_t reserved = 0;
};

/// One process's part of a run of several: "parent", "child", "rank R".
struct ProcessResult {
    std::string who;
    ProcessEnd end;
};

/// The lines a run ends with: with `withStops`, "workload: stopped after step N" (when
/// `stoppedAfter` is not 0) and "WHO: stopped after step N" of each part that stopped; then
/// "WHO checksum <hex>" of each part, and "checksum <hex>" of the whole run last.
std::string endLines(uint64_t checksum, uint32_t stoppedAfter,
                     const std::vector<ProcessResult>& parts, bool withStops);

/// Writes `text` into `path` through a temporary file renamed over it (a reader never sees half of
/// it); false, with errno, on failure.
bool writeWhole(const std::string& path, const std::string& text);

} // namespace workload
