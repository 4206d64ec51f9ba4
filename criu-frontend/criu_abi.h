#pragma once
/// \file
/// criu's plugin ABI, declared by the project (criu-plugin.h differs between versions and has no
/// extern "C" guards), and the detection of which ABI the running criu speaks, done before criu
/// verifies the plugin descriptor (criu-plugin-abi.md).

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
    kHookSlots = 15, ///< the most hooks any known criu has
};

/// Stages passed to init/exit.
enum Stage : int { kStageDump = 0, kStagePreDump = 1, kStageRestore = 2 };

/// The plugin version criu accepts (0.2.0 in every release).
inline constexpr unsigned kPluginVersion = 0x000200;

} // namespace frontend

extern "C" {
/// criu's cr_plugin_desc_t, with room for the most hooks any criu knows.
struct CriuPluginDesc {
    const char* name;
    int (*init)(int stage);
    void (*exit)(int stage, int ret);
    unsigned int version;
    unsigned int max_hooks;
    void* hooks[frontend::kHookSlots];
};
}

namespace frontend {

/// What the running criu offers.
struct CriuAbi {
    std::string release;     ///< "3.17".."4.2" or "dev", for messages
    unsigned maxHooks = 10;  ///< CR_PLUGIN_HOOK__MAX of that criu
    bool retryNeeded = false; ///< RESTORE_EXT_FILE takes (int id, bool *retry_needed)
    bool inventory = false;   ///< add_inventory_plugin / check_and_remove_inventory_plugin
    bool pluginOptions = false; ///< criu_plugin_get_options
    std::string how;          ///< how it was determined, for the debug log

    bool has(Hook hook) const { return static_cast<unsigned>(hook) < maxHooks; }
};

/// What detection may look at: criu's exported symbols and the version string in its binary.
struct CriuProbe {
    std::function<bool(const char* symbol)> hasSymbol;
    /// The CRIU_VERSION string of the running criu ("4.1.1"), "" when not found.
    std::function<std::string()> versionString;
    /// The CRIU_GITID of a build from git ("v4.2-37-g1a2b3c4"), "" for a release build.
    std::function<std::string()> gitId;
    /// A forced ABI from configuration ("3.17", "4.0", "4.2", "dev" or a hook count), "" = detect.
    std::string forced;
};

/// Decides the ABI. Rules: a forced value wins; else the version string gives the release
/// (3.x -> 10 hooks, 4.0/4.1 -> 12, 4.2 -> 13, later -> 15 with retry_needed); a git build made
/// after the 4.2 tag is the development branch (15 hooks); exported symbols
/// refine it (criu_plugin_get_options or a development build -> 15 hooks; add_inventory_plugin
/// -> at least 4.1). Without either, the 3.17 ABI (10 hooks), which every criu accepts.
CriuAbi detectCriuAbi(const CriuProbe& probe);

/// The probe of the criu this library is loaded into (dlsym(RTLD_DEFAULT), and the version
/// string read from the criu executable found through dladdr of one of criu's own functions).
CriuProbe runningCriuProbe();

/// Finds a `git describe` id ("v4.2-37-g1a2b3c4": 37 commits after v4.2) in a criu executable's
/// bytes, standing alone between NUL bytes; "" when there is none or several.
std::string findGitDescribe(const std::string& bytes);

/// Finds the version string ("4.1.1") in a criu executable's bytes: the only string of the form
/// N.N or N.N.N that stands alone between NUL bytes; "" when there is none or several.
std::string findVersionString(const std::string& bytes);

} // namespace frontend
