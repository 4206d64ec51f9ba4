#pragma once
/// \file
/// Checkpointing and restoring this test process's KFD state the way criu drives our KFD
/// backend (kfd::KfdDevice), with criu's own part played here: the files criu finds in the
/// task's fd table, the device VMAs it unmaps and maps again at the offsets updateVmaMap answers,
/// and the restored files put back at their fd numbers.

#include "fake_routes.h"
#include "kfd_test_machine.h"

#include "formats/image_store.h"

#include <map>
#include <memory>
#include <vector>

namespace thunkfake {

/// What a dump leaves for the restore: criu's file ids by the task's fd number, and the device
/// VMAs of the task (as /proc/PID/maps listed them).
struct DumpedTask {
    std::map<uint32_t, int> fdOfId;
    std::vector<FakeMapping> vmas;
};

/// The device files of task `pid` in the order criu dumps them: the KFD file before the render
/// nodes, as in a ROCm process (which opens /dev/kfd first) criu's fd order has them.
std::vector<kfd::ProcFd> deviceFilesInDumpOrder(fakekfd::FakeKernel& k, int pid);

/// criu maps the device VMA `v` again from `fd` at page offset `pgoff` (gtest expectations).
void mapAgain(const FakeMapping& v, int fd, uint64_t pgoff);

/// Dumps this process's KFD and render-node files on `m` into `store` with our backend (pause,
/// checkpoint, one dumpFile per file, unpause), as criu 4.x does (gtest assertions).
void dumpThisProcess(fakekfd::TestMachine& m, formats::ImageStore& store, DumpedTask* out);

/// The process's device memory goes away with the old machine: every device VMA becomes an
/// inaccessible anonymous reservation (so nothing read later can come from the old machine).
void dropDeviceVmas(const DumpedTask& task);

/// Restores the files of `task` from `store` onto `m` (installed, this process current) at their
/// old fd numbers, maps the device VMAs again where updateVmaMap says, and resumes the process
/// (gtest assertions).
void restoreThisProcess(fakekfd::TestMachine& m, formats::ImageStore& store,
                        const DumpedTask& task);

} // namespace thunkfake
