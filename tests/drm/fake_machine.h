#pragma once
/// \file
/// A machine for render-node tests: a FakeKernel plus the file trees the backend reads (dev
/// nodes, sysfs of render nodes, procfs of processes) in a temp dir, and helpers that play the
/// application (open render nodes, create, fill and map BOs through the fake's ioctls).

#include "amdgpu-drm/paths.h"
#include "fake_render_node.h"
#include "temp_dir.h"

#include "hal/device.h"
#include "settings/settings.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fakedrm {

/// An application's open render node.
struct AppFile {
    int pid = 0;
    int targetFd = -1; ///< fd number in the process
    int fd = -1;       ///< the fake fd behind it
    unsigned minor = 0;
};

/// What a GPU's render node adds to a machine's file tree, paths relative to its root: the node in
/// dev/dri and, with sysfs, the PCI device (vendor, device, a link to its driver) and the
/// class/drm entry whose `device` links to it, the links relative as sysfs has them. FakeMachine
/// writes them to its temp dir; the fuzz target render_topology_memory holds them in memory.
struct GpuFiles {
    std::vector<std::string> dirs;
    std::vector<std::pair<std::string, std::string>> files; ///< path, bytes
    std::vector<std::pair<std::string, std::string>> links; ///< path, target
};
GpuFiles gpuFiles(const GpuSpec& spec, const std::string& pci, bool sysfs);

/// A fake machine.
class FakeMachine {
public:
    FakeMachine();

    /// Adds a GPU at `pci` ("0000:03:00.0"); `sysfs` = false leaves sysfs without it.
    void addGpu(const GpuSpec& spec, const std::string& pci, bool sysfs = true);
    /// Opens renderD<minor> as fd `targetFd` of process `pid` (proc links and fdinfo included).
    AppFile open(int pid, int targetFd, unsigned minor);
    /// Dups `f` as fd `targetFd` of its process: the same open file (its proc link and fdinfo).
    AppFile dup(const AppFile& f, int targetFd);
    /// GEM_CREATE, filled with bytes derived from `seed`; returns the handle.
    uint32_t createBo(const AppFile& f, uint64_t size, uint64_t domains, uint64_t flags,
                      uint8_t seed);
    /// GEM_VA MAP; returns the ioctl's result.
    int mapBo(const AppFile& f, uint32_t handle, uint64_t addr, uint64_t offset, uint64_t size,
              uint64_t flags = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE);
    /// GEM_CLOSE of `handle` (the application frees a BO); returns the ioctl's result.
    int closeBo(const AppFile& f, uint32_t handle);
    /// GEM_MMAP offset of a BO.
    uint64_t mmapOffset(const AppFile& f, uint32_t handle);
    /// Exports `handle` of `from` and imports it into `to`; returns the handle in `to`.
    uint32_t share(const AppFile& from, uint32_t handle, const AppFile& to);
    /// What criu hands over for the file at dump: its own fd of the same open file.
    hal::FileRef criuFile(const AppFile& f, uint32_t id);
    /// What criu hands over for a dma-buf fd the process holds of BO `handle` of `f`.
    hal::FileRef criuDmabufFile(const AppFile& f, uint32_t handle, uint32_t id);
    /// The contents of a BO of a (fake) fd.
    std::vector<std::byte> contents(int fd, uint32_t handle);

    /// The device env for a device of this machine.
    hal::DeviceEnv env(formats::ImageStore* images) { return hal::DeviceEnv{&settings, images}; }

    testsupport::TempDir root;
    std::shared_ptr<FakeKernel> kernel;
    drm::Paths paths;
    settings::Settings settings;
};

/// Bytes a BO created with `seed` holds.
std::vector<std::byte> pattern(uint64_t size, uint8_t seed);

} // namespace fakedrm
