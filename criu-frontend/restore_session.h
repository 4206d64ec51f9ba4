#pragma once
/// \file
/// The restore's hooks (RESTORE_INIT, RESTORE_EXT_FILE, UPDATE_VMA_MAP, POST_FORKING,
/// RESUME_DEVICES_LATE), what init sets up for them (the exchange of GPU memory shared between
/// restored tasks, parallel restore) and the check of a signed checkpoint. Exceptions pass
/// through: PluginSession's barrier catches them and calls abandon().

#include "session_context.h"

#include "coordination/handoff_socket.h"
#include "coordination/parallel_restore.h"

#include <memory>

namespace frontend {

class RestoreSession {
public:
    explicit RestoreSession(SessionContext& context) : ctx_(context) {}

    /// At init, with a device: the share exchange, and parallel restore when the settings ask.
    void setUp();
    /// At init, with option trusted-certificates: the checkpoint (and its chain) is signed by a
    /// trusted certificate and holds what it signed; false (logged) when not. `settings` may be
    /// other than the context's (an inert run reads them for this alone).
    bool signatureAccepted(const settings::Settings& settings);

    int restoreInit();
    int restoreExtFile(int id);
    /// 1 with *newPgoff (and *pluginFd) set for a mapping of ours: criu applies new_pgoff only
    /// when the hook returns 1 (criu/files-reg.c).
    int updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff, uint64_t* newPgoff,
                     int* pluginFd);
    int postForking();
    int resumeDevicesLate(int pid);
    /// Kills restored task `pid`, whose GPU work cannot resume (it would hang), saying why.
    void stopRestoredTask(int pid);
    /// criu's exit: waits for the parallel restore, then ends the restore (undoing on failure).
    void end(int ret);
    /// After an internal error: exit undoes what the restore recreated.
    void abandon() { broken_ = true; }

private:
    void setUpShareExchange();
    /// Parallel restore (criu's main process): the channel the restored tasks hand BO contents
    /// over, through criu's fdstore; says why when this criu cannot have it.
    void setUpParallelRestore();
    /// Waits for the contents handed over so far and checks them (at the first resume, and at
    /// exit when criu failed before); false when they failed.
    bool finishParallelRestore();

    SessionContext& ctx_;
    std::unique_ptr<coordination::ShareExchange> shares_;     ///< memory shared between tasks
    std::unique_ptr<coordination::HandoffChannel> channel_;   ///< parallel restore: main <- tasks
    std::unique_ptr<coordination::ContentHandoff> handoff_;   ///< the tasks' end of it
    std::unique_ptr<coordination::ParallelRestore> parallel_; ///< criu's main process: the worker
    bool parallelFailed_ = false;
    bool broken_ = false;       ///< an internal error or a failed parallel restore
    bool resumeFailed_ = false; ///< a restored task's GPU work could not resume
};

} // namespace frontend
