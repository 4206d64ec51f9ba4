#pragma once
/// \file
/// The render-node backend's Device: checkpoint and restore of amdgpu GEM BOs through render
/// nodes only (Linux 6.18+, no KFD), and of the dma-buf fds of those BOs a process holds
/// (amdgpu-dmabuf_<id>.img). Render nodes have no queues to pause: the dump phases record
/// the process's render fds, list BOs and mappings, save contents and write images; restore
/// recreates BOs with their checkpointed handles, restores contents before any BO is mapped at
/// its final GPU address, then maps every recorded address.

#include "amdgpu-drm/kernel_interface.h"
#include "amdgpu-drm/paths.h"
#include "bo_contents.h"
#include "bo_shares.h"
#include "drm_calls.h"
#include "file_objects.h"
#include "file_sdma.h"
#include "handle_plan.h"
#include "proc_files.h"
#include "render_topology.h"
#include "sdma/engine.h"

#include "content/stream.h"
#include "formats/render_node_image.h"
#include "hal/device.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace drm {

/// Name of this backend.
inline constexpr const char* kBackendName = "amdgpu-drm";
/// How long a dump waits for the GPU work in flight on a BO (GEM_WAIT_IDLE) before giving up.
inline constexpr uint64_t kGpuIdleTimeoutNs = 10ull * 1000000000ull;

/// The Device of the amdgpu-drm backend.
class DrmDevice final : public hal::Device {
public:
    /// All calls go through `kernel`; files are looked up under `paths`.
    DrmDevice(hal::DeviceEnv env, std::shared_ptr<KernelInterface> kernel, Paths paths);
    ~DrmDevice() override;

protected:
    base::Result<bool> claimFileImpl(const hal::FileRef& file) override;
    base::Result<bool> claimVmaImpl(const hal::VmaRef& vma) override;
    base::Result<int> processOfFileImpl(const hal::FileRef& file) override;
    base::Result<bool> pauseImpl(int pid) override;
    base::Result<void> collectObjectsImpl(int pid) override;
    base::Result<void> streamContentsImpl(int pid) override;
    base::Result<void> writeFileImagesImpl(const hal::FileRef& file, int pid) override;
    base::Result<void> unpauseImpl(int pid) override;

    base::Result<bool> ownsImageImpl(uint32_t id) override;
    base::Result<int> restoreFileImpl(uint32_t id) override;
    base::Result<std::optional<hal::VmaAnswer>> updateVmaMapImpl(const hal::VmaQuery& q) override;
    base::Result<bool> resumeImpl(int pid) override;
    base::Result<void> abortRestoreImpl() override;
    base::Result<topology::Topology> localTopologyImpl() override;
    base::Result<std::optional<std::set<uint32_t>>> usableGpuIdsImpl() override;

private:
    // ------------------------------------------------------------------ dump state
    struct DumpBo {
        BoInfo info;
        std::vector<GemVmEntry> vms;
        uint64_t mmapOffset = 0;
        BoShare share;
        ContentPath path = ContentPath::None;
        std::optional<content::ContentChecksum> checksum;
    };
    struct DumpNode {
        int pid = 0;
        int targetFd = -1; ///< the fd number in the process
        int fd = -1;       ///< our fd of the same open file
        unsigned minor = 0;
        std::string path;
        std::string clientId;
        std::optional<uint32_t> fileId; ///< criu's id, once criu named the file
        std::vector<DumpBo> bos;
        std::vector<formats::DrmCtxEntry> contexts;
        std::vector<formats::DrmSyncobjEntry> syncobjs;
        bool collected = false;
        bool contentsSaved = false;
        bool done = false;
    };

    // ---------------------------------------------------------------- restore state
    struct RestoredFile {
        uint32_t id = 0;
        int fd = -1;
        unsigned srcMinor = 0;
        unsigned dstMinor = 0;
        /// Placeholder BOs holding numbers the application had freed: closed once `awaiting`
        /// is empty (until then every handle below the highest stays taken).
        std::set<uint32_t> gaps;
        /// Placeholder BOs holding the handles of imports not made yet.
        std::set<uint32_t> awaiting;
    };
    struct PendingImport {
        size_t file = 0; ///< index into restored_
        uint32_t boIndex = 0;
        formats::DrmBoEntry bo;
        uint64_t key = 0;
    };
    struct VmaTarget {
        uint64_t newOffset = 0;
        size_t file = 0;
    };

    bool isAmdgpuRenderNode(int fd);
    /// Whether fd `fd` of process `pid` (drm-client-id `clientId`, "" when unknown) is the same
    /// open DRM file as `other`.
    bool sameOpenFile(int pid, int fd, const std::string& clientId, const ProcRenderFd& other);
    DumpNode* nodeOfFile(const hal::FileRef& file);
    /// The dumped BO a dma-buf fd exports: its node and index (an owner before importers).
    std::optional<std::pair<DumpNode*, size_t>> boOfDmabuf(const hal::FileRef& file);
    base::Result<void> writeDmabufImage(const hal::FileRef& file);
    base::Result<int> restoreDmabuf(uint32_t id);
    base::Result<bool> restoreLaterImpl(uint32_t id) override;
    /// How often each dma-buf was put off (restoreLaterImpl): bounded, so that a dma-buf whose
    /// BO no file of its task restores fails naming it rather than being asked for forever.
    std::map<uint32_t, unsigned> putOff_;
    static constexpr unsigned kMaxPutOff = 256;
    base::Result<content::StagingBuffer*> staging();
    base::Result<sdma::Engine*> engineFor(unsigned minor, int fd);
    base::Result<std::unique_ptr<SdmaBo>> bindSdma(unsigned minor, int fd, uint32_t handle,
                                                   uint64_t size);
    base::Result<uint64_t> shareKeyOf(int fd, uint32_t handle);
    base::Result<void> collectNode(DumpNode& node);
    /// Decides, once per process, which BO owns the contents of each share key its BOs hold:
    /// keys already owned by a process written earlier stay theirs (their followers here record
    /// the owner's file id); the others go to this process's first non-imported BO holding them
    /// (else its first import), wherever among its files that BO is.
    void decideOwners(int pid);
    base::Result<void> saveContents(DumpNode& node);
    base::Result<void> waitGpuIdle(const DumpNode& node, uint32_t index, const DumpBo& bo);
    void dropNodesOf(int pid);
    /// BO `index` of `node` (of GPU `gpuId`) as the HAL saves it, its source made when the lane
    /// reaches it.
    hal::BoContents saveBo(DumpNode& node, uint32_t index, DumpBo& bo, uint32_t gpuId,
                           std::vector<std::unique_ptr<content::ContentSource>>& sources);
    base::Result<void> writeTopologyOnce();
    base::Result<uint32_t> gpuIdOfMinor(unsigned minor);

    base::Result<void> validateImage(const formats::RenderNodeImage& image,
                                     const std::vector<BoShare>& shares);
    base::Result<unsigned> destinationMinor(uint32_t srcGpuId);
    /// Fills the fresh `file` with handles 1..highest in ascending order (handle_plan.h): the
    /// BOs it owns at their handles, a placeholder BO at every other handle.
    base::Result<void> fillHandles(RestoredFile& file, const formats::RenderNodeImage& image,
                                   const std::vector<HandleSlot>& plan);
    /// Imports dma-buf `dmabuf` (the caller keeps it) as BO `bo` of `file` at its handle: its
    /// placeholder is closed and the import takes the number, then the lowest free one.
    base::Result<void> importBo(RestoredFile& file, const formats::DrmBoEntry& bo, int dmabuf);
    /// Closes the placeholders of `file`'s freed numbers once every import of it is in.
    base::Result<void> releaseGapsWhenComplete(RestoredFile& file);
    /// Imports `bo` of `file` from the BO of this process that holds `key`.
    base::Result<void> importLocal(RestoredFile& file, const formats::DrmBoEntry& bo, uint64_t key);
    /// Restores follower `index` of `file`: from this process's BO of its key when one is
    /// restored, from another process's (the share exchange) when the image names an owner file
    /// there, else later, when a later file of this process restores its owner.
    base::Result<void> restoreFollower(size_t fileIndex, uint32_t index,
                                       const formats::DrmBoEntry& bo, const BoShare& share);
    /// Makes the restored owner `bo` of `file` the memory of `key` for the other processes.
    base::Result<void> publishOwner(RestoredFile& file, const formats::DrmBoEntry& bo,
                                    uint64_t key);
    /// BO `index` of `file` (of checkpointed GPU `gpuId`) as the HAL restores it, its sink made
    /// when the lane reaches it.
    hal::BoContents restoreBoContents(RestoredFile& file, uint32_t index,
                                      const formats::DrmBoEntry& bo,
                                      std::vector<std::unique_ptr<content::ContentSink>>& sinks,
                                      uint32_t gpuId);
    /// Restores the contents of every BO of `image` this file owns, in one lane.
    base::Result<void> restoreContents(RestoredFile& file, const formats::RenderNodeImage& image,
                                       const std::vector<BoShare>& shares);
    base::Result<void> mapBo(RestoredFile& file, const formats::DrmBoEntry& bo);
    base::Result<void> resolvePendingImports();

    std::shared_ptr<KernelInterface> kernel_;
    DrmCalls calls_;
    Paths paths_;
    std::unique_ptr<content::StagingBuffer> staging_;
    std::map<unsigned, std::unique_ptr<sdma::Engine>> engines_;
    std::optional<topology::Topology> localTopology_;
    bool localFromKfd_ = false;

    std::vector<DumpNode> dumpNodes_;
    std::map<uint32_t, std::pair<int, int>> fileOwners_; ///< criu file id -> (pid, fd number)
    /// The BO of the dump that owns a share key's contents: (pid, fd number, GEM handle).
    struct OwnerRef {
        int pid = 0;
        int targetFd = -1;
        uint32_t handle = 0;
    };
    std::map<uint64_t, OwnerRef> keyOwners_;
    std::set<int> ownersDecided_; ///< pids whose BOs' ownership is decided
    bool topologyWritten_ = false;
    bool dumpWithoutDeviceHooks_ = false;

    bool handleMethodLogged_ = false; ///< the restore says once how it gives handles
    std::vector<RestoredFile> restored_;
    /// key -> (file, handle): the BO of this process that holds the memory of a share key (its
    /// owner, or a follower imported from another process)
    std::map<uint64_t, std::pair<size_t, uint32_t>> shareOwners_;
    std::vector<PendingImport> pending_;
    std::map<std::pair<unsigned, uint64_t>, VmaTarget> vmas_; ///< (source minor, old offset)
};

} // namespace drm
