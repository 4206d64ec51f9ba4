#pragma once
/// \file
/// criu's plugin ABI, declared by the project (criu-plugin.h differs between versions and has no
/// extern "C" guards), and the detection of which ABI the running criu speaks, done before criu
/// verifies the plugin descriptor (criu-frontend/README.md has the facts per criu version).

#include "plugin_abi_c.h"

#include <cstdint>
#include <functional>
#include <string>
#include <sys/stat.h>

namespace frontend {

/// Hook numbers (cr_plugin_hook_t).
enum Hook : int {
    kDumpUnixSk = 0,
    kRestoreUnixSk = 1,
    kDumpExtFile = 2,
    kRestoreExtFile = 3,
    kDumpExtMount = 4,
    kRestoreExtMount = 5,
    kDumpExtLink = 6,
    kHandleDeviceVma = 7,
    kUpdateVmaMap = 8,
    kResumeDevicesLate = 9,
    kPauseDevices = 10,
    kCheckpointDevices = 11,
    kPostForking = 12,
    kRestoreInit = 13,
    kDumpDevicesLate = 14,
    kUpdateInetsk = 15,
    kDumpFinish = 16,
    kHookSlots = CRIU_AMDGPU_HOOK_SLOTS, ///< the most hooks any known criu has (4.3)
};

/// Stages passed to init/exit.
enum Stage : int { kStageDump = 0, kStagePreDump = 1, kStageRestore = 2 };

/// The plugin version the plugin declares: 0.2.0, which every criu from 3.17 to 4.3 accepts (4.3
/// accepts up to 0.3.0 and reads the version only to reject newer plugins).
inline constexpr unsigned kPluginVersion = 0x000200;

/// criu's task states (opts.final_state): what criu does with the dumped tasks at the end.
enum FinalState : int { kTaskAlive = 1, kTaskDead = 2, kTaskStopped = 3 };

/// What the running criu offers.
struct CriuAbi {
    std::string release;      ///< "3.17-3.19", "4.0-4.1", "4.2", "4.3", ... for messages
    unsigned maxHooks = 10;   ///< the hooks the descriptor declares (<= criu's CR_PLUGIN_HOOK__MAX)
    bool retryNeeded = false; ///< RESTORE_EXT_FILE takes (int id, bool *retry_needed)
    bool inventory = false;   ///< add_inventory_plugin / check_and_remove_inventory_plugin
    bool pluginOptions = false; ///< criu_plugin_get_options
    std::string how;            ///< how it was determined, for the debug log

    bool has(Hook hook) const { return static_cast<unsigned>(hook) < maxHooks; }
};

/// What detection may look at: criu's exported symbols.
struct CriuProbe {
    std::function<bool(const char* symbol)> hasSymbol;
    /// CR_PLUGIN_HOOK__MAX of the running criu, read from the size of its exported hook table
    /// (cr_plugin_ctl: one list head, then one per hook); 0 when unknown.
    std::function<unsigned()> hookTableSize;
    /// A forced ABI from configuration ("3.17", "4.0", "4.2", "4.3", "dev" or a hook count), ""
    /// = detect.
    std::string forced;
};

/// Decides the ABI. The running criu's hook count comes from its hook table; the hooks and
/// signatures follow from it (10: 3.17-3.19; 12: 4.0-4.1; 13: 4.2; 14-16: development branch
/// after 4.2, RESTORE_EXT_FILE with retry_needed; 17: 4.3; more: a later criu, of which the
/// plugin uses the 4.3 hooks). A forced value wins, but never declares more hooks than the
/// running criu has (criu would refuse the plugin and abort). Without a hook table, the 3.17 ABI
/// (10 hooks), which every criu accepts. The inventory and plugin options are used only when
/// criu exports their functions.
CriuAbi detectCriuAbi(const CriuProbe& probe);

/// The probe of the criu this library is loaded into: dlsym(RTLD_DEFAULT) and the dynamic symbol
/// table entry of cr_plugin_ctl. Reads no file; costs a few symbol lookups.
CriuProbe runningCriuProbe();

/// The hook count a criu hook table of `bytes` bytes holds on this machine (a list head is two
/// pointers); 0 when `bytes` is not such a table.
unsigned hookCountOfTableSize(uint64_t bytes);

} // namespace frontend
