#pragma once
/// \file
/// The mock backend's Device: checkpoints and restores mock GPU contexts through the mock
/// driver's CRIU operations, in the render-node image format of CRIU's development-branch
/// plugin (amdgpu-renderD-<id>.img listing the BOs, the context state as priv_data, and one
/// amdgpu-drm-pages-<id>-<minor>-<index>.img per BO, framed like every upstream image), plus
/// amdgpu-topology.img.

#include "mockgpu/context.h"
#include "mockgpu/held_gates.h"
#include "mockgpu/machine.h"
#include "mockgpu/state_codec.h"

#include "content/stream.h"
#include "formats/render_node_image.h"
#include "hal/device.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mock {

/// The GEM domains a mock BO is recorded with in the render-node image (AMDGPU_GEM_DOMAIN_VRAM
/// and/or _GTT after its kfd-style flags): a BO CRIU's plugin would restore the contents of.
uint32_t mockBoDomains(uint32_t flags);

class MockDevice final : public hal::Device {
public:
    MockDevice(hal::DeviceEnv env, std::string root, MachineConfig config);

protected:
    base::Result<bool> claimFileImpl(const hal::FileRef& file) override;
    base::Result<int> processOfFileImpl(const hal::FileRef& file) override;
    base::Result<bool> pauseImpl(int pid) override;
    base::Result<void> collectObjectsImpl(int pid) override;
    base::Result<void> streamContentsImpl(int pid) override;
    base::Result<void> writeFileImagesImpl(const hal::FileRef& file, int pid) override;
    base::Result<void> unpauseImpl(int pid) override;
    /// Unpauses the contexts `pid` holds open and opens the call gates of `pid` and of its
    /// descendants, reading everything from the machine directory and /proc.
    base::Result<hal::PausedRelease> releasePausedImpl(int pid, int pidfd) override;

    base::Result<bool> ownsImageImpl(uint32_t id) override;
    base::Result<int> restoreFileImpl(uint32_t id) override;
    base::Result<void> restoreHandedContentsImpl(coordination::ContentJob& job,
                                                 std::span<std::byte> staging) override;
    base::Result<bool> resumeImpl(int pid) override;
    base::Result<void> abortRestoreImpl() override;
    base::Result<topology::Topology> localTopologyImpl() override;
    base::Result<std::optional<std::set<uint32_t>>> usableGpuIdsImpl() override;
    std::string deviceViewImpl() override;
    /// Makes the render node of `gpu` in the restored process's device directory if it lacks it.
    base::Result<void> ensureDeviceNode(const topology::Node& gpu);

private:
    /// A context of a process being dumped.
    struct DumpedContext {
        uint32_t id = 0;
        ContextState state;
    };

    content::StagingBuffer& staging();
    /// Writes amdgpu-topology.img at the first file: the GPUs the dumped processes use (all of the
    /// machine's under a criu without device hooks, which dumps files before it knows them all).
    base::Result<void> writeTopologyOnce();
    /// As much of `staging` as the mock's CPU copy uses well.
    static std::span<std::byte> laneStaging(std::span<std::byte> staging);
    /// A render-node image of this backend and the mock state decoded from its priv_data.
    struct MockImage {
        formats::RenderNodeImage image;
        RenderNodeState priv;
    };
    /// The image of criu file id `id` when it is the mock's (read and decoded once), else null.
    base::Result<const MockImage*> imageOf(uint32_t id);
    /// Saves every BO of `image` (one pages file each) and records their checksums in it.
    base::Result<void> saveContents(const DumpedContext& dc, formats::RenderNodeImage& image);
    /// Restores every BO of `image` into `ctx` here.
    base::Result<void> restoreContents(const Context& ctx, const formats::RenderNodeImage& image,
                                       const std::string& gpu);
    /// Publishes the shared BOs `image` owns and imports those it follows, through the share
    /// exchange (from other restored processes too).
    base::Result<void> shareMemory(const Context& ctx, const formats::RenderNodeImage& image);
    /// Parallel restore: hands every BO of `image` in `ctx` to criu's main process.
    base::Result<void> handOverContents(const Context& ctx, const formats::RenderNodeImage& image,
                                        uint32_t dstGpu);
    /// BO `index` of render-node image `id` (of checkpointed GPU `gpuId` at render `minor`) as
    /// the HAL restores it into `sink`.
    static hal::BoContents restoredBo(uint32_t id, uint32_t gpuId, uint32_t minor, uint32_t index,
                                      const formats::DrmBoEntry& bo, content::ContentSink* sink);
    /// Restores `lane` (its staging area cut to laneStaging) from the images of file `id`.
    base::Result<void> restoreLane(uint32_t id, hal::ContentsLane& lane);

    std::string root_;
    MachineConfig config_;
    std::unique_ptr<content::StagingBuffer> staging_;
    std::map<uint32_t, int> ownerOfContext_;           ///< context id -> pid (dump)
    std::map<int, std::vector<DumpedContext>> dumped_; ///< pid -> its contexts
    std::map<uint64_t, uint32_t> shareOwners_; ///< shared memory -> criu file id owning it (dump)
    HeldGates gates_{root_};                   ///< the call gates this dump holds
    bool topologyWritten_ = false;
    bool dumpWithoutDeviceHooks_ = false; ///< criu before 4.0: files dumped before any device hook
    std::map<uint32_t, std::optional<MockImage>> images_; ///< criu id -> image
    /// The device directory a restored process sees its GPUs in: option `dev-root` when set,
    /// else the one its checkpointed context was opened through; empty: every GPU of the root.
    std::string restoreDevDir_;
    std::string restoreDevDir() const;
    /// Identifies this restore in the contexts its tasks recreate: criu runs RESTORE_EXT_FILE in
    /// each restored task (a fork of this process), so a failed restore finds them by this id.
    uint64_t restoreSession_;
};

} // namespace mock
