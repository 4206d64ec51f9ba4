#pragma once
/// \file
/// The dump's hooks (DUMP_EXT_FILE, HANDLE_DEVICE_VMA, PAUSE_DEVICES, CHECKPOINT_DEVICES,
/// DUMP_DEVICES_LATE, DUMP_FINISH), the guardian they keep informed of what is paused, and the
/// signing of the checkpoint at its end. Exceptions pass through: PluginSession's barrier catches
/// them and calls abandon().

#include "dump_guardian.h"
#include "session_context.h"

#include <memory>
#include <set>

namespace frontend {

class DumpSession {
public:
    explicit DumpSession(SessionContext& context) : ctx_(context) {}

    int dumpExtFile(int fd, int id);
    int handleDeviceVma(int fd, const struct stat* st);
    int pauseDevices(int pid);
    int checkpointDevices(int pid);
    int dumpDevicesLate();
    /// criu 4.3's DUMP_FINISH(ret), before the dumped tasks are released: unpauses, then signs;
    /// may come a second time with an error after another plugin's DUMP_FINISH failed.
    int dumpFinish(int ret);
    /// criu's exit: ends the dump (unpausing) unless DUMP_FINISH or DUMP_DEVICES_LATE did.
    void end(int ret);
    /// After an internal error: whatever this dump paused runs again; the dump then fails.
    void abandon();
    /// At init: warns when the checkpoint is to be signed and this criu cannot.
    void warnIfCannotSign();
    /// The dump ended normally (whatever its outcome): the guardian leaves without acting.
    void dismissGuardian();

    /// The dump's guardian, while one runs (nullptr before the first pause and after the end).
    const DumpGuardian* guardian() const { return guardian_.get(); }

private:
    /// Pauses `pid`, which criu has seized (or a backend that does not need it), the guardian told.
    int pauseSeized(int pid);
    /// DUMP_FINISH's GPU part: unpauses what the dump paused (-ENOTSUP without a device).
    int finishDumpAtDumpFinish(int ret);
    /// With option checkpoint-signing-key: signs the image directory after a dump that succeeded
    /// (0, or an error for criu); after a failure removes what it signed.
    int signAtDumpFinish(int ret);
    /// Tells the guardian which processes are paused now, starting it at the first pause.
    void syncGuardian();
    /// Starts the dump's guardian unless it runs (or could not be started); true when it runs.
    bool startGuardian();
    /// Whether process `pid` holds an AMD GPU device file (it may be paused next).
    bool holdsAmdgpuFile(int pid);

    SessionContext& ctx_;
    std::set<int> pauseAtCheckpoint_; ///< PAUSE_DEVICES seen, pause when criu has seized
    bool dumpFinished_ = false;
    bool manifestWritten_ = false;           ///< this session signed the image directory
    std::unique_ptr<DumpGuardian> guardian_; ///< releases the paused if criu dies
    bool guardianFailed_ = false;            ///< it could not be started (warned once)
};

} // namespace frontend
