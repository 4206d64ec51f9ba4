#pragma once
/// \file
/// mockgpu-workload --ranks N: training shaped as torchrun runs it on one node. A launcher forks
/// N ranks, each on a GPU of its own. Each rank exports a communication buffer (a dma-buf),
/// hands it to the launcher over a unix socket (SCM_RIGHTS), and imports every peer's, received
/// again over SCM_RIGHTS or taken from the peer with pidfd_getfd as newer ROCm runtimes do. Each
/// step is an all-reduce through the imported buffers, in lock step: every rank writes its
/// contribution into its own buffer, waits for the others, mixes every peer's buffer into its
/// working buffer, and waits again before the next step overwrites anything. So each rank's
/// result depends on every peer's memory at every step, and not on timing: a run checkpointed and
/// restored anywhere prints the checksum of an uninterrupted one only when the sharing survived.
/// With a stop file, the launcher looks for it at each step's last barrier and, once it is there,
/// has every rank stop after that step, all at the same one.

#include "result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace workload {

/// How peers hand each other their dma-bufs.
enum class ShareBy { Scm, Pidfd };

struct RankOptions {
    std::string root;   ///< the mock machine
    std::string devDir; ///< the device directory the ranks see ("" = every GPU of the root)
    unsigned ranks = 2;
    unsigned gpus = 1; ///< rank r uses GPU r % gpus
    uint64_t size = 1 << 20;
    unsigned steps = 20;
    unsigned stepMs = 100;
    ShareBy shareBy = ShareBy::Scm;
    std::string stopFile; ///< the ranks stop after the step this file is first seen at ("": none)
};

/// Runs the launcher and its ranks to the end; each rank's result ("rank R", its checksum and the
/// step it stopped after), in rank order, or an exit status > 0 in `failed`.
std::vector<ProcessResult> runRanks(const RankOptions& o, int& failed);

} // namespace workload
