#pragma once
/// \file
/// The memory of a user-space KFD machine: one sparse file under the driver root behind a loop
/// block device. Every process reaches the same memory through block nodes of that device (the
/// block device's page cache is one memory for all of them: mappings, pread and pwrite), and a
/// mapping of it is a mapping of a file that is neither regular nor /dev/zero, which criu hands
/// to the plugins (HANDLE_DEVICE_VMA). The device is made with LO_FLAGS_AUTOCLEAR: the kernel
/// detaches it when its last fd closes and its last mapping goes, so a driver that dies leaks
/// nothing.

#include "fake_kfd.h"

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace kfddriver {

/// A loop device over `backingFile`, attached for as long as this object (or any process's fd
/// or mapping of it) lives.
class LoopMemory final : public fakekfd::MemoryPlacement {
public:
    /// Where kfd pages (doorbell slices, MMIO pages) are placed: past every BO offset the fake
    /// gives (render-node offsets start at 1 MiB and restored BOs at 1 GiB more).
    static constexpr uint64_t kKfdPageBase = 1ull << 38;
    /// The alignment of each kfd page (loop_memory.cpp says why).
    static constexpr uint64_t kKfdPageAlign = 1ull << 32;

    /// Makes `backingFile` a sparse file of `size` bytes and attaches a free loop device to it.
    /// On failure, *error says what failed and the object is not usable.
    LoopMemory(const std::string& backingFile, uint64_t size, std::string* error);
    ~LoopMemory() override;
    LoopMemory(const LoopMemory&) = delete;
    LoopMemory& operator=(const LoopMemory&) = delete;

    /// The loop device's numbers (block major 7) and this process's fd of it.
    dev_t rdev() const { return rdev_; }
    int fd() const { return fd_; }
    /// The loop device's index (/sys/block/loopN).
    int index() const { return index_; }
    /// Makes ROOT/files/ID/NAME (kfddriver::filesPath), a block node of the loop device, for file
    /// `id` of the driver at `root` (kept when it exists): 0 or -errno.
    int makeFileNode(const std::string& root, int64_t id, const std::string& name) const;

    // fakekfd::MemoryPlacement: a BO lies at its render-node mmap offset, so that a mapping of the
    // render node at a BO's offset is the mapping of the loop device at that offset; kfd pages
    // lie from kKfdPageBase, one after the other, each at a multiple of kKfdPageAlign.
    int placeBo(uint64_t mmapOffset, uint64_t size, fakekfd::MemoryRegion* out) override;
    int placeKfdPage(uint64_t size, fakekfd::MemoryRegion* out) override;
    /// A kfd page's mmap offset is where it lies: the kernel's (type and gpu_id from bit 46)
    /// are past what a block device maps, and the same for every process.
    bool kfdOffsetsAreItsOwn() const override { return true; }

private:
    int fd_ = -1;
    int index_ = -1;
    dev_t rdev_ = 0;
    uint64_t size_ = 0;
    uint64_t nextKfdPage_ = kKfdPageBase;
};

/// Whether loop device `index` is attached to a file (its /sys/block/loopN/loop directory).
bool loopAttached(int index);
/// Whether loop device `index` is detached within `ms` milliseconds (the kernel detaches an
/// autoclear device after its last close, not always before close returns).
bool loopDetachedWithin(int index, int ms);

} // namespace kfddriver
