#pragma once
/// \file
/// The checkpoint and restore operations of a GPU device, defined once. Public methods are
/// non-virtual: they check arguments and phase order, log, keep the "never leave a process
/// paused" promise, and call the backend's `...Impl` virtuals for the device-specific parts.
///
/// Dump, per process:   pause -> collect objects -> stream contents -> write file images -> unpause
///   criu 4.0+ drives pause/checkpoint from PAUSE_DEVICES / CHECKPOINT_DEVICES; older criu only
///   calls DUMP_EXT_FILE, and dumpFile() then runs the earlier phases itself.
/// Restore: plan the GPU mapping -> recreate objects and contents (restoreFile) -> new mmap
///   offsets for device VMAs (updateVmaMap) -> resume.

#include "hal/bo_contents.h"

#include "base/result.h"
#include "coordination/parallel_restore.h"
#include "coordination/share_exchange.h"
#include "formats/chunk_codec.h"
#include "formats/image_chain.h"
#include "formats/image_store.h"
#include "settings/settings.h"
#include "topology/match.h"
#include "topology/topology.h"

#include <sys/stat.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace datapath {
class IncrementalDump;
class RestoreChain;
} // namespace datapath

namespace topology {
class DeviceNodeCalls;
enum class AbsentNode;
} // namespace topology

namespace hal {

using base::Error;
using base::Result;
using coordination::ContentHandoff;
using coordination::ContentJob;
using coordination::ShareExchange;
using datapath::IncrementalDump;
using datapath::RestoreChain;
using formats::ChainBudget;
using formats::CodecSpec;
using formats::ImageStore;
using topology::AbsentNode;
using topology::DeviceNodeCalls;
using topology::MatchReport;
using topology::Topology;

/// A file criu asks about: its fd (at dump, criu's copy of the task's fd), criu's id for it,
/// its stat and its path (readlink of /proc/self/fd/<fd>).
struct FileRef {
    int fd = -1;
    uint32_t id = 0;
    struct stat st {};
    std::string path;
};

/// A device mapping criu found while parsing a task's smaps at dump.
struct VmaRef {
    int fd = -1; ///< an fd of the mapped file
    struct stat st {};
    std::string path;
};

/// At restore: a device mapping criu is about to recreate.
struct VmaQuery {
    std::string path;
    uint64_t addr = 0;
    uint64_t oldPgoff = 0;
};

/// The answer to a VmaQuery: the offset to map at, and optionally an fd to map from.
struct VmaAnswer {
    uint64_t newPgoff = 0;
    int fd = -1; ///< owned by the caller after return (criu 3.19+ closes it)
};

/// Where one process stands in a dump on this device.
enum class DumpPhase { None, Paused, Collected, Checkpointed, Failed, Unpaused };

/// Name of a dump phase, for messages.
const char* dumpPhaseName(DumpPhase phase);

/// What releasing the GPU work of a process that a dead dumper left paused found.
enum class PausedRelease {
    Unpaused,  ///< its GPU work was paused and runs again
    NotPaused, ///< it has GPU work of this backend, none of it paused
    NoGpu,     ///< it has nothing on this backend
    Gone,      ///< no such process (it exited)
};

/// Name of a release outcome, for messages ("unpaused", "not paused", ...).
const char* pausedReleaseName(PausedRelease outcome);

/// What a Device is handed by its host (the criu frontend, a tool or a test).
struct DeviceEnv {
    const settings::Settings* settings = nullptr; ///< must outlive the Device
    ImageStore* images = nullptr;                 ///< may be set later with setImageStore()
    /// The calls that probe and make device nodes; nullptr: the system's. (The mock backend,
    /// which has no kernel boundary of its own, takes them from here; tests stand a devices
    /// cgroup in.) Must outlive the Device.
    DeviceNodeCalls* deviceNodes = nullptr;
    /// Whether GPUs whose render node the device directory lacks are asked of the kernel through
    /// a probe node (a restore, which makes the node of each GPU it restores onto), or count as
    /// not given (a tool checking a pod's /dev beforehand).
    bool probeAbsentNodes = true;
};

/// One backend's view of the GPUs for one criu run (a dump or a restore).
class Device {
public:
    Device(std::string backendName, DeviceEnv env);
    virtual ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    /// The backend's name ("kfd", "amdgpu-drm", "mock").
    const std::string& backendName() const { return backendName_; }
    /// Sets where images are read and written (criu's image dir or streamer).
    void setImageStore(ImageStore* images) { env_.images = images; }

    // ---------------------------------------------------------------- dump
    /// True when `file` (a device fd criu cannot dump) belongs to this backend.
    Result<bool> claimFile(const FileRef& file);
    /// True when the mapping belongs to this backend (criu then skips its contents).
    Result<bool> claimVma(const VmaRef& vma);
    /// Stops the GPU work of `pid`. False when the process has nothing on this backend.
    Result<bool> pauseProcess(int pid);
    /// Whether pauseProcess needs criu to have seized `pid` first. KFD takes its CRIU ops only
    /// from the task itself or its ptrace parent (kfd_ioctl: EBADF otherwise), and criu calls
    /// PAUSE_DEVICES before it seizes the task (criu/seize.c, collect_pstree and
    /// collect_children): the frontend then pauses at CHECKPOINT_DEVICES, when every task is
    /// seized and frozen.
    virtual bool pausesOnlySeizedTasks() const { return false; }
    /// Collects the objects of a paused `pid` and streams their contents into images. On
    /// failure the process is unpaused at once.
    Result<void> checkpointProcess(int pid);
    /// Writes the images of one claimed file; runs pause and checkpoint first when criu did not.
    Result<void> dumpFile(const FileRef& file);
    /// Ends the dump: unpauses every process still paused (success or not).
    Result<void> finishDump(bool dumpSucceeded);
    /// The phase of `pid` (None when never seen).
    DumpPhase phaseOf(int pid) const;
    /// The processes this dump has paused and not unpaused yet (what a dumper's death would leave
    /// paused), in pid order.
    std::vector<int> pausedProcesses() const;
    /// Lets the GPU work of `pid` run again after the dumper that paused it died: works in any
    /// process with the rights of criu (the guardian, the tool), reopening what it needs, and
    /// without any state of a dump. Safe on a process that is not paused or has exited.
    /// `pidfd`, when >= 0, pins the process that was paused (coordination/process_pin.h): the
    /// backend checks it before each step that names the pid, and a process that exited is Gone
    /// without anything done to whatever process holds its pid now. -1: the pid alone (a tool
    /// given a pid by an operator).
    Result<PausedRelease> releasePaused(int pid, int pidfd = -1);

    // ------------------------------------------------------------- restore
    /// True when the dump holds an image of this backend for criu's file id.
    Result<bool> ownsImage(uint32_t id);
    /// True when the file of criu's id `id` cannot be restored yet and can be once criu restored
    /// other files of the task (a dma-buf whose BO's render node is a later fd of the task):
    /// criu 4.3 then asks again later (RESTORE_EXT_FILE's retry_needed).
    Result<bool> restoreLater(uint32_t id);
    /// Recreates the file of criu's id `id` and its objects; returns the new fd.
    Result<int> restoreFile(uint32_t id);
    /// New offset (and fd) for a device mapping; nullopt when the mapping is not ours.
    Result<std::optional<VmaAnswer>> updateVmaMap(const VmaQuery& query);
    /// Called once all tasks are forked (criu 4.2+).
    Result<void> postForking();
    /// Parallel restore, in a restored task: BO contents go to criu's main process through
    /// `handoff` instead of being copied here (nullptr: copied here, the default).
    void setContentHandoff(ContentHandoff* handoff) { handoff_ = handoff; }
    /// Parallel restore, in criu's main process: restores the contents of a job a task handed
    /// over, with `staging` as the lane's staging area. The job's fds are closed either way.
    Result<void> restoreHandedContents(ContentJob& job, std::span<std::byte> staging);
    /// Closes the fds of a job that will not run.
    void discardHandedContents(ContentJob& job);
    /// Where restored tasks hand each other the GPU memory they share (made by the host in criu's
    /// main process before it forks; must outlive the Device). Without one, memory is shared only
    /// within one process.
    void setShareExchange(ShareExchange* exchange) { shares_ = exchange; }
    /// Lets the GPU work of restored `pid` run again. False when `pid` has nothing of ours.
    Result<bool> resumeProcess(int pid);
    /// Ends the restore; on failure, destroys what was recreated.
    Result<void> finishRestore(bool restoreSucceeded);

    /// How a restore would map the GPUs of `source`, decided exactly as restoreFile() decides it
    /// but without restoring anything (`criu-amdgpu image check`).
    struct RestoreMatch {
        Topology local;     ///< this machine's topology as the backend sees it
        MatchReport report; ///< the matcher's answer with the settings' rules
    };
    /// Reads this machine's topology and the GPUs the restoring process could open, then runs the
    /// matcher with the settings' rules, device map and force-single-gpu.
    Result<RestoreMatch> matchForRestore(const Topology& source);

protected:
    // Dump-side parts a backend implements.
    /// True when a dump whose criu `parent` link holds no chunk record (and no `parent-images`
    /// option) is a full dump rather than an error (kfd: CRIU's pages files need no parent).
    virtual bool fullDumpWithoutParentRecords() const { return false; }
    virtual Result<bool> claimFileImpl(const FileRef& file) = 0;
    virtual Result<bool> claimVmaImpl(const VmaRef& vma);
    /// The pid whose GPU state `file` holds (host pid namespace).
    virtual Result<int> processOfFileImpl(const FileRef& file) = 0;
    virtual Result<bool> pauseImpl(int pid) = 0;
    virtual Result<void> collectObjectsImpl(int pid) = 0;
    virtual Result<void> streamContentsImpl(int pid) = 0;
    virtual Result<void> writeFileImagesImpl(const FileRef& file, int pid) = 0;
    virtual Result<void> unpauseImpl(int pid) = 0;
    /// releasePaused(): the default says this backend cannot. `pidfd` is -1 or a pin of `pid`.
    virtual Result<PausedRelease> releasePausedImpl(int pid, int pidfd);

    // Restore-side parts.
    virtual Result<bool> ownsImageImpl(uint32_t id) = 0;
    virtual Result<int> restoreFileImpl(uint32_t id) = 0;
    virtual Result<bool> restoreLaterImpl(uint32_t id);
    virtual Result<std::optional<VmaAnswer>> updateVmaMapImpl(const VmaQuery& query);
    virtual Result<void> postForkingImpl();
    virtual Result<void> restoreHandedContentsImpl(ContentJob& job, std::span<std::byte> staging);
    virtual void discardHandedContentsImpl(ContentJob& job);
    virtual Result<bool> resumeImpl(int pid) = 0;
    virtual Result<void> abortRestoreImpl();

    /// The topology of this machine as this backend sees it.
    virtual Result<Topology> localTopologyImpl() = 0;
    /// The destination gpu_ids the restoring process can open; nullopt = all of them.
    virtual Result<std::optional<std::set<uint32_t>>> usableGpuIdsImpl();
    /// What device nodes the restoring process was given, for the error when the usable GPUs do
    /// not suffice ("/dev holds kfd, dri/renderD130"); empty: nothing to say.
    virtual std::string deviceViewImpl();

    /// Settings handed in by the host.
    const settings::Settings& settings() const { return *env_.settings; }
    /// env.deviceNodes, else the system's calls.
    DeviceNodeCalls& deviceNodeCalls() const;
    /// What env.probeAbsentNodes asks for absent render nodes.
    AbsentNode absentNodes() const;
    /// The gpu_ids of `topo` this process may open through `calls` in `devDir` (absent nodes as
    /// env.probeAbsentNodes says; real GPUs: the node must open), each GPU left out logged and
    /// named, with what the kernel answered, in the error of a restore that finds too few.
    std::set<uint32_t> gpusThisProcessMayOpen(DeviceNodeCalls& calls, const Topology& topo,
                                              const std::string& devDir) const;
    /// ensureRenderNode for GPU `gpuId` at render `minor`, logged when the node was made.
    Result<void> giveRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor,
                                uint32_t gpuId) const;
    /// Where a restored task hands BO contents over (parallel restore); nullptr: copy them here.
    ContentHandoff* contentHandoff() const { return handoff_; }
    /// Where restored BOs shared with other processes are published and fetched.
    ShareExchange& shareExchange();
    /// The image store; an error when the host has not set one.
    Result<ImageStore*> images();
    /// Whether the image store holds any of the images `names` (ownsImageImpl of a backend whose
    /// files are named by criu's file id).
    Result<bool> holdsAnyImage(std::initializer_list<std::string> names);
    /// The parent this dump compares against (datapath/image_increment.h), opened from the image
    /// store at its first use (before the first pause when `parent-images` is set) and kept for
    /// the whole dump.
    Result<const IncrementalDump*> incrementalDump();
    /// How this dump compresses BO contents (option `content-compression`).
    Result<CodecSpec> contentCodec() const;
    /// Saves the BO contents of criu file `fileId` (hal/bo_contents.h), one lane per element of
    /// `lanes` (several at once, a thread each), each lane's staging sized to its BOs. Where the
    /// settings ask for CRIU's files (full, uncompressed, plain) and the lanes name their GPU
    /// pages files, each lane into its pages file, filling in the lane's checksum and bytes;
    /// otherwise each BO into a file of its own, named from its BoFileId as this dump names
    /// contents (CRIU's name, or a delta, packed, encrypted), compared with the parent's record,
    /// filling in each BO's checksum and writing the file's chunk record. Says which it wrote.
    Result<ContentsFiles> saveBoContents(uint32_t fileId, std::vector<ContentsLane>& lanes);
    /// The chain the contents of the image of criu file `id` are assembled from (loaded once),
    /// or null when they are all in the checkpoint itself. Safe to call from several threads
    /// (the lanes of a parallel restore); the chain lives as long as the device.
    Result<const RestoreChain*> restoreChainOf(uint32_t id);
    /// Maps the GPUs of `source` onto this machine (memoised for the whole restore): the
    /// matcher with the settings' rules, device map and force-single-gpu.
    Result<std::map<uint32_t, uint32_t>> planGpuMapping(const Topology& source);
    /// The GPUs of the checkpoint as amdgpu-topology.img describes them, read at the first call
    /// and kept for the whole restore; an Image error naming the store when it has none.
    Result<const Topology*> sourceTopology();
    /// planGpuMapping() of sourceTopology().
    Result<std::map<uint32_t, uint32_t>> planFromTopologyImage();

private:
    Result<void> failDump(int pid, Error error);
    /// incrementalDump(), or a full dump where fullDumpWithoutParentRecords() allows one.
    Result<const IncrementalDump*> contentsIncrement();
    /// Whether this dump writes BO contents to files of ours, one per BO (compressed, encrypted or
    /// a delta of a parent), rather than to CRIU's files.
    Result<bool> contentsInFilesOfOurs();

    std::string backendName_;
    DeviceEnv env_;
    std::map<int, DumpPhase> phases_;
    std::set<uint32_t> dumpedFiles_;
    std::set<uint32_t> restoredFiles_;
    std::optional<std::map<uint32_t, uint32_t>> gpuMapping_;
    std::optional<Topology> sourceTopology_; ///< amdgpu-topology.img, once read
    /// Why gpusThisProcessMayOpen left each GPU out, for the error of a restore that finds too few.
    mutable std::vector<std::string> gpusLeftOut_;
    bool restoreFailed_ = false;
    ContentHandoff* handoff_ = nullptr;
    ShareExchange* shares_ = nullptr;
    std::unique_ptr<ShareExchange> localShares_; ///< when the host set no exchange
    std::unique_ptr<IncrementalDump> incremental_;
    std::map<uint32_t, std::shared_ptr<const RestoreChain>> chains_;
    ChainBudget chainBudget_; ///< the chunk records every chain of the checkpoint may read
    std::mutex formatsMutex_; ///< of incremental_ and chains_: lanes may ask at once
};

} // namespace hal
