#pragma once
/// \file
/// What the plugin does for each criu hook, independent of criu's C ABI: loads the settings,
/// finds and chooses a backend, opens the image store, and turns hal::Result into criu's return
/// codes. Every hook answers -ENOTSUP for what is not its own, and the whole session stays inert
/// (debug logs only) on a machine without an AMD GPU.
///
/// init never fails: a plugin that cannot set itself up (a bad option, a backend that was asked
/// for and is not there, an internal error) remembers why and fails only the checkpoints that
/// involve an AMD GPU (AmdgpuFileRecognizer), with that reason. Every public method is an
/// exception barrier: an exception becomes an error return after the GPU work this dump paused
/// is unpaused, never std::terminate inside criu.

#include "amdgpu_file_recognizer.h"
#include "criu_abi.h"
#include "criu_services.h"
#include "dump_guardian.h"

#include "config/config.h"
#include "hal/device.h"
#include "coordination/handoff_socket.h"
#include "coordination/parallel_restore.h"
#include "formats/image_store.h"
#include "hal/registry.h"

#include <functional>
#include <memory>
#include <set>
#include <string>

namespace frontend {

/// The plugin's name: CRIU's own AMD plugin's, so inventories and images interoperate.
inline constexpr const char* kPluginName = "amdgpu_plugin";

/// One criu run of the plugin (a dump or a restore).
class PluginSession {
public:
    /// What init needs from its surroundings; tests substitute every part.
    struct Host {
        CriuServices services;
        CriuAbi abi;
        std::string pluginDir; ///< directory of amdgpu_plugin.so (backends are in ./amdgpu)
        config::Sources sources;
        AmdgpuFileRecognizer::Paths devicePaths; ///< where AMD GPU files are recognised
        /// Where the dump's guardian (dump_guardian.h) keeps its record and log; "": no
        /// guardian is started.
        std::string guardianDir;
    };

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
    const DumpGuardian* guardian() const { return guardian_.get(); }

    /// True when a backend serves this run.
    bool active() const { return device_ != nullptr; }
    /// The chosen backend's name ("" when inert).
    const std::string& backendName() const { return backendName_; }
    /// Why the plugin could not set itself up ("" when it could, or had nothing to do).
    const std::string& setupError() const { return setupError_; }

private:
    int initUnguarded(int stage);
    void setUpBackend(const config::LoadedConfig& loaded, bool inventoryKnown);
    /// No backend serves this run, for `why`; when criu's inventory says the checkpoint used this
    /// plugin, AMD GPU files of the checkpoint fail with that reason.
    void goInert(const std::string& why, bool inventoryKnown);
    /// Remembers why the plugin cannot serve AMD GPUs in this run, and warns once.
    void deferSetupError(std::string error);
    void exitUnguarded(int stage, int ret);
    int dumpExtFileUnguarded(int fd, int id);
    int restoreExtFileUnguarded(int id);
    int handleDeviceVmaUnguarded(int fd, const struct stat* st);
    int updateVmaMapUnguarded(const char* path, uint64_t addr, uint64_t oldPgoff,
                              uint64_t* newPgoff, int* pluginFd);
    int resumeDevicesLateUnguarded(int pid);
    int pauseDevicesUnguarded(int pid);
    /// Pauses `pid`, which criu has seized (or a backend that does not need it), the guardian told.
    int pauseSeized(int pid);
    int checkpointDevicesUnguarded(int pid);
    int dumpDevicesLateUnguarded();
    int dumpFinishUnguarded(int ret);
    /// DUMP_FINISH's GPU part: unpauses what the dump paused (-ENOTSUP without a device).
    int finishDumpAtDumpFinish(int ret);

    /// Runs `body`; an exception becomes afterException's answer, after `rollback` (if any).
    int guard(const char* hook, const std::function<int()>& body,
              const std::function<void()>& rollback = nullptr) noexcept;
    /// Logs the exception, unpauses what this dump paused, marks a restore as failed; -EIO.
    int afterException(const char* hook, const char* what) noexcept;

    int fail(const char* hook, hal::Error error);
    /// Without a device: the error for `what` when the file (fd, or stat and path) is an AMD GPU
    /// device that this plugin cannot serve; -ENOTSUP for any other file.
    int refuseIfAmdgpu(const char* what, const struct stat& st, const std::string& path);
    /// Why no backend serves this run, for errors about AMD GPU files.
    std::string unservedReason() const;
    const AmdgpuFileRecognizer& recognizer();
    hal::Result<hal::ImageStore*> imageStore();
    /// At restore, the capability the checkpoint asks of the backend ("" when any will do).
    std::string restoreRouting();
    void registerInInventory();
    /// Tells the guardian which processes are paused now, starting it at the first pause.
    void syncGuardian();
    /// Starts the dump's guardian unless it runs (or could not be started); true when it runs.
    bool startGuardian();
    /// Whether process `pid` holds an AMD GPU device file (it may be paused next).
    bool holdsAmdgpuFile(int pid);
    /// The dump ended normally (whatever its outcome): the guardian leaves without acting.
    void dismissGuardian();
    void stopRestoredTask(int pid);
    /// At restore (criu's main process, at init): the exchange through which restored tasks hand
    /// each other the GPU memory they share, through criu's fdstore.
    void setUpShareExchange();
    /// Parallel restore (criu's main process, at init): the channel the restored tasks hand BO
    /// contents over, through criu's fdstore; says why when this criu cannot have it.
    void setUpParallelRestore();
    /// Waits for the contents handed over so far and checks them (at the first resume, and at
    /// exit when criu failed before); false when they failed.
    bool finishParallelRestore();
    /// At restore's init, with option trusted-certificates: the checkpoint (and its chain) is
    /// signed by a trusted certificate and holds what it signed; false (logged) when not.
    bool restoreSignatureAccepted(const config::Settings& settings);
    /// At dump's init: warns when the checkpoint is to be signed and this criu cannot.
    void warnIfCannotSign();
    /// At DUMP_FINISH, with option checkpoint-signing-key: signs the image directory after a
    /// dump that succeeded (0, or an error for criu); after a failure removes what it signed.
    int signAtDumpFinish(int ret);

    Host host_;
    int stage_ = -1;
    config::Settings settings_;
    std::unique_ptr<hal::BackendRegistry> registry_;
    std::unique_ptr<hal::ImageStore> images_;
    std::unique_ptr<hal::Device> device_;
    std::unique_ptr<AmdgpuFileRecognizer> recognizer_;
    std::vector<std::string> mockRoots_; ///< named by the configuration, even a broken one
    std::string backendName_;
    std::string setupError_;
    std::string inertReason_;
    bool inventoryAdded_ = false;
    bool manifestWritten_ = false; ///< dump: this session signed the image directory
    bool restoreRefused_ = false;  ///< restore: the signature check refused the checkpoint
    bool dumpFinished_ = false;
    std::set<int> pauseAtCheckpoint_; ///< dump: PAUSE_DEVICES seen, pause when criu has seized
    bool restoreBroken_ = false;
    bool resumeFailed_ = false;
    std::unique_ptr<hal::ShareExchange> shares_;     ///< restore: memory shared between tasks
    std::unique_ptr<hal::HandoffChannel> channel_;   ///< parallel restore: main <- tasks
    std::unique_ptr<hal::ContentHandoff> handoff_;   ///< the tasks' end of it
    std::unique_ptr<hal::ParallelRestore> parallel_; ///< criu's main process: the worker
    bool parallelFailed_ = false;
    std::unique_ptr<DumpGuardian> guardian_; ///< dump: releases the paused if criu dies
    bool guardianFailed_ = false;            ///< it could not be started (warned once)
};

} // namespace frontend
