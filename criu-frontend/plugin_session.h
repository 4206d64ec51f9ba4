#pragma once
/// \file
/// What the plugin does for each criu hook, independent of criu's C ABI: loads the settings,
/// finds and chooses a backend, opens the image store, and turns base::Result into criu's return
/// codes. Every hook answers -ENOTSUP for what is not its own, and the whole session stays inert
/// (debug logs only) on a machine without an AMD GPU.
///
/// init never fails: a plugin that cannot set itself up (a bad option, a backend that was asked
/// for and is not there, an internal error) remembers why and fails only the checkpoints that
/// involve an AMD GPU (AmdgpuFileRecognizer), with that reason. Every public method is an
/// exception barrier: an exception becomes an error return after the GPU work this dump paused
/// is unpaused, never std::terminate inside criu.

#include "dump_session.h"
#include "restore_session.h"
#include "session_context.h"

#include "config/config.h"
#include "hal/registry.h"

#include <functional>
#include <memory>
#include <string>

namespace frontend {

/// One criu run of the plugin: set-up at init, then a DumpSession or a RestoreSession (the
/// stage's) drives the hooks, each hook behind the exception barrier.
class PluginSession {
public:
    using Host = SessionHost;

    /// criu's init(stage): always 0 (see the file comment).
    int init(int stage, Host host);
    /// criu's exit(stage, ret): ends the dump (unpausing) or the restore (undoing on failure).
    void exit(int stage, int ret);

    int dumpExtFile(int fd, int id);
    int restoreExtFile(int id);
    int handleDeviceVma(int fd, const struct stat* st);
    /// 1 with *newPgoff (and *pluginFd) set for a mapping of ours: criu applies new_pgoff only
    /// when the hook returns 1 (criu/files-reg.c).
    int updateVmaMap(const char* path, uint64_t addr, uint64_t oldPgoff, uint64_t* newPgoff,
                     int* pluginFd);
    int resumeDevicesLate(int pid);
    int pauseDevices(int pid);
    int checkpointDevices(int pid);
    int dumpDevicesLate(int id);
    /// criu 4.3's DUMP_FINISH(ret), before the dumped tasks are released: unpauses; may come a
    /// second time with an error after another plugin's DUMP_FINISH failed.
    int dumpFinish(int ret);
    int postForking();
    int restoreInit();

    /// The dump's guardian, while one runs (nullptr before the first pause and after the end).
    const DumpGuardian* guardian() const { return dump_ ? dump_->guardian() : nullptr; }

    /// True when a backend serves this run.
    bool active() const { return ctx_.device != nullptr; }
    /// The chosen backend's name ("" when inert).
    const std::string& backendName() const { return ctx_.backendName; }
    /// Why the plugin could not set itself up ("" when it could, or had nothing to do).
    const std::string& setupError() const { return ctx_.setupError; }

private:
    int initUnguarded(int stage);

    /// Runs `body`; an exception becomes afterException's answer, after `rollback` (if any).
    int guard(const char* hook, const std::function<int()>& body,
              const std::function<void()>& rollback = nullptr) noexcept;
    /// Logs the exception, unpauses what this dump paused, marks a restore as failed; -EIO.
    int afterException(const char* hook, const char* what) noexcept;
    /// Runs a hook of the dump session behind the barrier (-ENOTSUP outside a dump).
    int dumpHook(const char* hook, const std::function<int(DumpSession&)>& body);
    /// Runs a hook of the restore session behind the barrier (-ENOTSUP outside a restore).
    int restoreHook(const char* hook, const std::function<int(RestoreSession&)>& body,
                    const std::function<void(RestoreSession&)>& rollback = nullptr);

    // The backends' libraries outlive their device (declared first, destroyed last); the sessions
    // go before the context whose device refers to what they hold.
    std::unique_ptr<hal::BackendRegistry> registry_;
    SessionContext ctx_;
    bool restoreRefused_ = false;       ///< restore: the signature check refused the checkpoint
    std::unique_ptr<DumpSession> dump_; ///< at dump
    std::unique_ptr<RestoreSession> restore_; ///< at restore
};

} // namespace frontend
