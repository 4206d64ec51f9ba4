#pragma once
/// \file
/// CRIU's own amdgpu plugin (Debian's criu 4.1.1 source, built unmodified by
/// upstream/prepare.sh with upstream/criu_shims.c for criu's symbols) loaded into this test
/// process, and criu's part of a dump and a restore driven through its plugin descriptor the way
/// criu 4.1 drives it: init(stage), HANDLE_DEVICE_VMA for each device VMA, DUMP_EXT_FILE for each
/// device file in fd order, RESTORE_EXT_FILE for each file id, UPDATE_VMA_MAP for each VMA,
/// RESUME_DEVICES_LATE, exit(stage).

#include "criu_steps.h"

#include <string>

namespace thunkfake {

/// Where upstream/prepare.sh put the plugin (CTest sets CRIU_AMDGPU_UPSTREAM_PLUGIN).
std::string upstreamPluginPath();

/// criu's inventory image: the plugins a checkpoint needs (criu 4.1's add_inventory_plugin).
/// A restore by the upstream plugin disables itself when its name is not listed.
void upstreamInventoryAdd(const char* name);
int upstreamInventoryCount();

/// Dumps this process's KFD and render-node files on `m` into `imagesDir` with the upstream
/// plugin (gtest assertions). The process is unpaused when it returns.
void upstreamDumpThisProcess(fakekfd::TestMachine& m, const std::string& imagesDir,
                             DumpedTask* out);

/// Restores the files of `task` from `imagesDir` onto `m` (installed, this process current)
/// with the upstream plugin at their old fd numbers, maps the device VMAs again where
/// UPDATE_VMA_MAP says and resumes the process (gtest assertions).
void upstreamRestoreThisProcess(fakekfd::TestMachine& m, const std::string& imagesDir,
                                const DumpedTask& task);

} // namespace thunkfake
