#pragma once
/// \file
/// The KFD backend's Device: checkpoint and restore of processes using /dev/kfd.
///
/// Dump of a process: pauseImpl = PROCESS_INFO on the process's own KFD file (criu's copy of it,
/// found in /proc/<pid>/fd and fetched with pidfd_getfd); collectObjectsImpl = CHECKPOINT;
/// BO contents go by SDMA to the files the HAL names as soon as criu's file id is known (it names
/// them); writeFileImagesImpl writes criu_kfd / criu_render_node; unpauseImpl = UNPAUSE. Restore:
/// checks the images, maps GPUs, RESTORE with one render-node fd per target GPU, writes contents
/// back (here, or in criu's main process with parallel restore), RESUME in resumeImpl.

#include "hal/device.h"
#include "kfd/bo_transfer.h"
#include "kfd/contents_lanes.h"
#include "kfd/hsakmt_shm.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_criu.h"
#include "kfd/kfd_images.h"
#include "kfd/vma_records.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kfd {

/// What the host chooses beyond Settings.
struct KfdDeviceOptions {
    /// Directory of libhsakmt's shared memory segment and semaphore at restore (criu restores
    /// files inside the restored process's mount namespace: its /dev/shm).
    std::string shmDir = kDefaultShmDir;
    /// Where a dump finds the checkpointed process's own /dev/shm: PROCROOT/PID/root/dev/shm.
    std::string procRoot = "/proc";
};

/// The KFD Device.
class KfdDevice final : public hal::Device {
public:
    /// A Device issuing every kernel call through `kernel`.
    KfdDevice(hal::DeviceEnv env, std::shared_ptr<KernelInterface> kernel,
              KfdDeviceOptions options = {});
    ~KfdDevice() override;

    /// The device directory: option dev-root, else /dev.
    std::string devDir() const;
    /// `<devRoot>/kfd`.
    std::string kfdPath() const;
    /// `<devRoot>/dri/renderD<minor>`.
    std::string renderPath(int minor) const;
    /// The pause is AMDKFD_IOC_CRIU_OP PROCESS_INFO on the task's own KFD file, which the kernel
    /// takes only from the task or its ptrace parent (see hal::Device).
    bool pausesOnlySeizedTasks() const override { return true; }

protected:
    /// criu's `parent` link to a checkpoint without chunk records (CRIU's own plugin's, or a
    /// full uncompressed KFD dump) makes a full dump, as with CRIU's plugin; option parent-images
    /// must name a parent that has them.
    bool fullDumpWithoutParentRecords() const override { return true; }
    base::Result<bool> claimFileImpl(const hal::FileRef& file) override;
    base::Result<bool> claimVmaImpl(const hal::VmaRef& vma) override;
    base::Result<int> processOfFileImpl(const hal::FileRef& file) override;
    base::Result<bool> pauseImpl(int pid) override;
    base::Result<void> collectObjectsImpl(int pid) override;
    base::Result<void> streamContentsImpl(int pid) override;
    base::Result<void> writeFileImagesImpl(const hal::FileRef& file, int pid) override;
    base::Result<void> unpauseImpl(int pid) override;
    /// UNPAUSE through a fresh copy of the process's KFD file, as its ptrace parent for the call.
    base::Result<hal::PausedRelease> releasePausedImpl(int pid, int pidfd) override;

    base::Result<bool> ownsImageImpl(uint32_t id) override;
    base::Result<int> restoreFileImpl(uint32_t id) override;
    base::Result<std::optional<hal::VmaAnswer>> updateVmaMapImpl(const hal::VmaQuery& q) override;
    base::Result<void> restoreHandedContentsImpl(coordination::ContentJob& job,
                                                 std::span<std::byte> staging) override;
    void discardHandedContentsImpl(coordination::ContentJob& job) override;
    base::Result<bool> resumeImpl(int pid) override;
    base::Result<void> abortRestoreImpl() override;
    base::Result<topology::Topology> localTopologyImpl() override;
    /// The GPUs whose render node exists here: KFD's sysfs lists every GPU of the host, of which a
    /// container is given a few (AMD's device plugin: /dev/kfd and one render node per GPU).
    base::Result<std::optional<std::set<uint32_t>>> usableGpuIdsImpl() override;

private:
    /// A process being dumped.
    struct DumpedProcess {
        KernelFd kfdFd; ///< this process's copy of the task's KFD file
        ProcessInfo info;
        std::optional<CheckpointData> data;
        std::vector<KernelFd> dmabufs; ///< owned dmabuf fds of the CHECKPOINT BO buckets
        topology::Topology entries;    ///< device entries (GPUs renamed to user gpu_ids)
        std::map<uint32_t, uint32_t> userToActual;
        std::optional<HsakmtShm> shm;
        std::optional<uint32_t> fileId;
        bool streamed = false;
        std::vector<PagesDigest> digests;
        ContentsLayout layout = ContentsLayout::PagesPerGpu;
        std::map<uint32_t, content::ContentChecksum> boSums; ///< PerBo: by BO index
    };

    /// BO contents of a restored KFD file still to be written back.
    struct PendingContents {
        uint32_t id = 0;
        std::vector<GpuTransfer> jobs;            ///< one per GPU of the image
        std::vector<KernelFd> dmabufs;            ///< the kernel's dmabuf fds of the restored BOs
        const hal::RestoreChain* chain = nullptr; ///< PerBo images dumped against a parent
    };

    /// The fd number of /dev/kfd in process `pid` (-1: none); NotFound when `pid` is gone.
    base::Result<int> kfdFdOfTask(int pid);
    // claim
    /// What kernel_->fstat says of fd `fd` (criu's copy of a task's file): criu's own stat of it
    /// is the kernel's file, which a user-space KFD driver's are not. All zero when it fails.
    struct stat deviceStat(int fd);
    /// Whether fd `fd` is /dev/kfd or an amdgpu render node, as deviceStat says.
    base::Result<bool> isOurDevice(int fd);
    base::Result<bool> holdsFile(int pid, const hal::FileRef& file);
    // dump
    /// Refuses the process when it holds BOs of its own on an amdgpu render node (made or
    /// imported through the render node itself, by Mesa beside HIP or libdrm: KFD's BOs hold no
    /// handle in the process's render files), which this backend does not checkpoint: an error
    /// naming each such file and its BOs, asked (GEM_LIST_HANDLES, Linux 6.18+) before
    /// anything is paused. On a kernel without GEM_LIST_HANDLES it cannot tell: logged.
    base::Result<void> refuseOwnRenderBos(int pid);
    base::Result<topology::Topology> entriesTopology(const DumpedProcess& p,
                                                     const topology::Topology& local, int pid);
    base::Result<void> streamContents(int pid, DumpedProcess& p, uint32_t id);
    base::Result<DumpedProcess*> dumped(int pid);
    // restore
    base::Result<int> restoreKfd(uint32_t id);
    base::Result<int> restoreRenderNode(uint32_t id);
    base::Result<int> renderFdFor(uint32_t targetGpuId);
    base::Result<const topology::Topology*> localTopology();
    /// Copies the contents here, one lane per GPU.
    base::Result<void> writeContents(PendingContents& pending);
    /// Parallel restore: hands them to criu's main process, one job per GPU.
    base::Result<void> handOverContents(PendingContents& pending);

    std::shared_ptr<KernelInterface> kernel_;
    KfdDeviceOptions options_;
    std::map<int, DumpedProcess> dumped_;
    std::map<int, uint32_t> kfdFileIdOfPid_;
    std::optional<topology::Topology> local_;
    std::map<uint32_t, KernelFd> renderFds_; ///< restore: one open render node per target GPU
    std::vector<KernelFd> restoredKfdFds_;   ///< restore: a copy of each restored KFD file, which
                                             ///< its kfd pages are mapped through
    VmaRecords vmas_;
    std::map<uint32_t, uint32_t> gpuMap_; ///< restore: source gpu_id -> this machine's
    std::string scanError_;               ///< why a process could not be looked into
    int scanErrno_ = 0;
};

/// Where the staging budget comes from: settings::stagingBufferSize(settings).
uint64_t kfdStagingBytes(const settings::Settings& settings);

} // namespace kfd
