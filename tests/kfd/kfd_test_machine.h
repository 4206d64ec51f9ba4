#pragma once
/// \file
/// A fake machine for KFD backend tests: a synthetic topology written as a sysfs tree, the fake
/// kernel serving it, settings pointing at both, a shm directory and an image directory.

#include "fake_kfd.h"
#include "temp_dir.h"

#include "formats/image_store.h"
#include "kfd/kfd_device.h"
#include "settings/settings.h"
#include "topology/synth.h"

#include <memory>
#include <string>

namespace fakekfd {

/// Every alloc flag combination a KFD process uses.
inline constexpr uint32_t kVram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
                                  KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE |
                                  KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
inline constexpr uint32_t kVramPublic = KFD_IOC_ALLOC_MEM_FLAGS_VRAM |
                                        KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC |
                                        KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
inline constexpr uint32_t kGtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
                                 KFD_IOC_ALLOC_MEM_FLAGS_COHERENT |
                                 KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
inline constexpr uint32_t kGttAql = KFD_IOC_ALLOC_MEM_FLAGS_GTT |
                                    KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM |
                                    KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
inline constexpr uint32_t kUserptr =
    KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
inline constexpr uint32_t kDoorbell = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
                                      KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
                                      KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
inline constexpr uint32_t kMmio =
    KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

/// One fake machine.
class TestMachine {
public:
    explicit TestMachine(const topology::SyntheticSpec& spec,
                         const std::string& devRoot = "/fakedev");
    /// A machine of a topology read from `sysfsRoot` (a captured tree), devices under `devRoot`.
    TestMachine(topology::Topology topology, const std::string& sysfsRoot,
                const std::string& devRoot);

    topology::Topology topology;
    testsupport::TempDir dir;
    std::shared_ptr<FakeKernel> kernel;
    settings::Settings settings;
    std::string shmDir;    ///< criu's /dev/shm (and a restored process's)
    std::string procRoot;  ///< the fake /proc: a dumped process's /dev/shm is in processShmDir
    std::string sysfsRoot; ///< the KFD topology tree this machine shows

    /// A KfdDevice on this machine writing to / reading from `images`.
    std::unique_ptr<kfd::KfdDevice> device(formats::ImageStore* images);
    /// criu's FileRef for fd `taskFd` of task `pid` with criu's file id `id`.
    hal::FileRef fileRef(int pid, int taskFd, uint32_t id);
};

/// A machine spec of `gpus` MI210s with gpu_ids from `base` and render minors from `minorBase`.
topology::SyntheticSpec machineSpec(unsigned gpus, uint32_t base = 0x1000, int minorBase = 128);

/// The BO contents of a process, for comparing a dump with its restore.
std::vector<std::vector<std::byte>> contentsOf(const FakeProcess& p);

} // namespace fakekfd
