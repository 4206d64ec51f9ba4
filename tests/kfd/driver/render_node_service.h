#pragma once
/// \file
/// The render nodes of a user-space driver's machine at the ioctl level: every render-node file a
/// process opens through the driver is also a file of the fake render node of ../../drm (its
/// rules: GEM handles, VA, INFO, contexts, BO lists, AMDGPU_CS with its SDMA engine, syncobjs),
/// so that an unmodified libdrm_amdgpu runs on it. BOs live in the machine's memory (the loop
/// device, loop_memory.h) at their GEM_MMAP offset, so a process maps a BO by mapping its render
/// fd at that offset, as on the kernel. The DRM ioctls arrive as the preload interposer sends them
/// (render_node_protocol.h); their user buffers are the caller's (drm_user_buffers.h).

#include "fake_kfd.h"
#include "fake_render_node.h"
#include "kfd/driver_protocol.h"
#include "loop_memory.h"
#include "render_node_protocol.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kfddriver {

class RenderNodeService final : private fakedrm::BoPlacement, public fakekfd::ForeignDmabufs {
public:
    /// Where the BOs of render nodes lie in the machine's memory: above the KFD's render-node BO
    /// offsets and below its kfd pages (LoopMemory::kKfdPageBase).
    static constexpr uint64_t kBoBase = 1ull << 37;

    /// The render nodes of the driver at `root`, their BOs in `memory`.
    RenderNodeService(const std::string& root, std::shared_ptr<LoopMemory> memory);
    ~RenderNodeService() override;
    RenderNodeService(const RenderNodeService&) = delete;
    RenderNodeService& operator=(const RenderNodeService&) = delete;

    /// The driver opened file `id` at `path`: when it is a render node, its DRM file here (and the
    /// sysfs entries libdrm reads of its device under drmSysfsPath()): 0 or -errno.
    int opened(int64_t id, const std::string& path);
    /// Whether `offset` of a render node is where this service puts BOs.
    static bool servesOffset(uint64_t offset) {
        return offset >= kBoBase && offset < LoopMemory::kKfdPageBase;
    }
    /// A DRM ioctl of process `caller` on file `id` (Op::Ioctl with b == kDrmUserIoctl).
    Message ioctl(pid_t caller, const Message& request);
    /// Where in the machine's memory a mapping of `len` bytes at `offset` of file `id` lies: 0
    /// (*where set) or -errno (EACCES: no BO of the file is there, as drm_gem_mmap says).
    int mapping(int64_t id, uint64_t offset, uint64_t len, uint64_t* where);

    /// Whether file `id` is a dma-buf of a render-node BO (PRIME_HANDLE_TO_FD made it).
    bool isDmabuf(int64_t id) const { return dmabufs_.count(id) != 0; }
    /// Where in the machine's memory a mapping of `len` bytes at `offset` of dma-buf `id` lies,
    /// as dma_buf_mmap_internal and amdgpu's GEM object mmap answer it: 0 (*where set), -EINVAL
    /// past the BO's end, -EPERM for a BO made NO_CPU_ACCESS.
    int dmabufMapping(int64_t id, uint64_t offset, uint64_t len, uint64_t* where) const;
    /// The memory of the BO dma-buf `id` exports, for the KFD fake's SDMA engine on the GPU of
    /// render minor `minor` (the driver's Op::Libdrm: the backend's copies through a dma-buf):
    /// 0, or -EINVAL for no dma-buf of this service's or a BO of another GPU (no P2P).
    int importDmabuf(int minor, int id, std::shared_ptr<fakesdma::Memory>* memory) override;
    /// fstat of dma-buf `id`: its node's, with the BO's size as st_size (dma_buf_getfile sets
    /// i_size): 0 or -errno.
    int dmabufStat(int64_t id, struct stat* st) const;

    /// Whether file `id` is a fence file: a syncobj's fd or a sync file
    /// (render_node_fence_files.cpp).
    bool isFenceFile(int64_t id) const { return fenceFiles_.count(id) != 0; }
    /// fstat of fence file `id`: its node's: 0 or -errno.
    int fenceFileStat(int64_t id, struct stat* st) const;

    /// The `nth` call (from 1) of the render-node ioctl `name` (servedDrmRequestNamed), by any
    /// process, fails with `err`: false for a name the driver does not serve.
    bool failIoctl(const std::string& name, int err, int nth);

    /// The fake render node (tests look at its state).
    fakedrm::FakeKernel& kernel() { return kernel_; }

    /// The first file id of a dma-buf: above every file id of the KFD fake, below INT32_MAX
    /// (drm_prime_handle's fd is an s32).
    static constexpr int64_t kDmabufFileBase = 1ll << 30;
    /// The first file id of a fence file: 2^29 above the first dma-buf's, below INT32_MAX
    /// (drm_syncobj_handle's and sync_merge_data's fds are s32).
    static constexpr int64_t kFenceFileBase = 3ll << 29;

private:
    int place(uint64_t size, fakedrm::PlacedMemory* out) override;
    /// PRIME_HANDLE_TO_FD on the fake's file `fd`: the dma-buf file id in `fd` of the struct,
    /// *readWrite whether its file is open read-write (the first export's DRM_RDWR).
    int primeExport(int fd, void* arg, bool* readWrite);
    /// PRIME_FD_TO_HANDLE on the fake's file `fd`, the struct's `fd` a dma-buf file id.
    int primeImport(int fd, void* arg);
    /// A served DRM ioctl `request` on the fake's file `fd` (*readWrite: PRIME's answer).
    int dispatch(int fd, unsigned long request, void* arg, bool* readWrite);
    /// SYNCOBJ_HANDLE_TO_FD on the fake's file `fd`: the new fence file's id in `fd` of the struct.
    int syncobjExport(int fd, void* arg);
    /// SYNCOBJ_FD_TO_HANDLE on the fake's file `fd`, the struct's `fd` a fence file id (or -1).
    int syncobjImport(int fd, void* arg);
    /// An ioctl of process `caller` on fence file `request.file` (a sync file's own ioctls).
    Message fenceFileIoctl(pid_t caller, const Message& request);
    /// A fence file of the fake's fd `fakeFd` with a node named `node`: its id, or -errno (the
    /// fake's fd closed).
    int64_t addFenceFile(int fakeFd, const char* node);
    /// The fake's fd of fence file `id`, or -1 (the fake takes it for no file of its own).
    int fakeFdOfFenceFile(int64_t id) const;

    /// A dma-buf: the BO it exports, the fake's fd of it, and its file's access mode.
    struct Dmabuf {
        std::shared_ptr<fakedrm::Bo> bo;
        int fakeFd = -1;
        bool readWrite = false;
    };

    std::string root_;
    std::shared_ptr<LoopMemory> memory_;
    fakedrm::FakeKernel kernel_;
    std::map<int64_t, int> fds_; ///< the fake's fd of each render file, by the driver's id
    uint64_t nextOffset_ = kBoBase;
    std::map<int64_t, Dmabuf> dmabufs_; ///< by file id, one per BO exported (never closed)
    int64_t nextDmabuf_ = kDmabufFileBase;
    /// A fence file: the fake's fd of it and its node's name (kSyncobjNodeName,
    /// kSyncFileNodeName).
    struct FenceFile {
        int fakeFd = -1;
        const char* node = nullptr;
    };
    /// Every fence file, by file id (never closed: a program's last close of its fd is the
    /// kernel's, which the driver does not see).
    std::map<int64_t, FenceFile> fenceFiles_;
    int64_t nextFenceFile_ = kFenceFileBase;
};

} // namespace kfddriver
