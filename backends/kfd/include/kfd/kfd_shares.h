#pragma once
/// \file
/// BOs of several KFD processes (or of one) that are the same memory: a BO one process exported
/// (a dma-buf, AMDKFD_IOC_EXPORT_DMABUF) and another imported (AMDKFD_IOC_IMPORT_DMABUF).
///
/// What the kernel reports: CHECKPOINT lists an imported BO like any other, with the flags the
/// import gave it (VRAM or GTT after the exporter's placement, writable, executable) and a
/// dma-buf fd of the same dma-buf as its exporter's. RESTORE allocates new memory for every
/// bucket, an import included. CRIU's plugin records no sharing of KFD BOs (it writes each BO's
/// contents and restores each as its own memory).
///
/// Here, at dump, the inode of a BO's CHECKPOINT dma-buf is its share key (hal::BoSharing): the
/// first BO of the dump with a key owns the contents, the others are followers written without
/// contents. At restore, the owner's task publishes the dma-buf of its restored BO under the key
/// (hal::ShareExchange) and each follower's task imports it (IMPORT_DMABUF) at the follower's
/// address on its GPU, so the processes share that memory again.

#include "hal/image_store.h"
#include "hal/render_node_image.h"
#include "hal/result.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_images.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kfd {

/// The share key of the memory behind a dma-buf fd: its inode.
hal::Result<uint64_t> dmabufShareKey(KernelInterface& kernel, int dmabufFd);

/// AMDKFD_IOC_IMPORT_DMABUF on the KFD file `kfdFd`: a new BO of that process holding the memory
/// of `dmabufFd`, at `va` on (user) GPU `gpuId`. Returns its KFD memory handle.
hal::Result<uint64_t> kfdImportDmabuf(KernelInterface& kernel, int kfdFd, uint32_t gpuId,
                                      uint64_t va, int dmabufFd);

/// Which BO of the dump owns each share key: the first one dumped with it. Only owners of memory
/// that another BO of the dump holds too are recorded as shared (and published at restore).
class ShareOwners {
public:
    struct Owner {
        int pid = 0;
        size_t bo = 0;                ///< index among the process's CHECKPOINT BOs
        std::optional<uint32_t> file; ///< criu file id of its KFD image, once known
        bool followed = false;        ///< another BO of the dump holds its memory
        bool written = false;         ///< its KFD image is written
    };
    /// The sharing of BO `bo` of `pid` with memory `key`: the owner when no other BO holds the
    /// key yet (or when it is this BO again), else a follower. Nothing (a BO of its own, with
    /// its contents) when the owner's image is already written without it: a criu without
    /// CHECKPOINT_DEVICES checkpoints each process only as it dumps its file.
    std::optional<hal::BoSharing> claim(uint64_t key, int pid, size_t bo);
    /// The KFD image of `pid` is criu file `id`.
    void setFile(int pid, uint32_t id);
    /// The KFD image of `pid` is written: its owners take no more followers.
    void setWritten(int pid);
    /// The owner of `key`, or nullptr.
    const Owner* find(uint64_t key) const;

private:
    std::map<uint64_t, Owner> owners_;
};

/// Restore, before the kernel is asked for anything: every follower of image `name` has its
/// owner in the same image, or in the KFD image the dump named for it, which the store must
/// hold. An Image error names the BO, the file and the key.
hal::Result<void> checkShareOwners(hal::ImageStore& store, const KfdImage& image,
                                   const std::string& name);

/// "BO 3 (VRAM, 4096 bytes at 0x7f...) of amdgpu-kfd-5.img, share key 5001" for messages.
std::string describeSharedBo(const KfdImage& image, size_t bo, const std::string& name);

} // namespace kfd
