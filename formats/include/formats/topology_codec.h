#pragma once
/// \file
/// Topology <-> `kfd_device_entry` messages (the topology part of `criu_kfd` and of
/// `amdgpu-topology.img`), and reading/writing `amdgpu-topology.img` (`amdgpu_devinfo`).

#include "base/result.h"
#include "formats/image_names.h"
#include "formats/image_store.h"
#include "topology/topology.h"

#include "criu-amdgpu.pb-c.h"

#include <memory>
#include <vector>

namespace formats {

using base::Result;
using topology::Topology;

/// Owns the protobuf-c structs of a list of device entries built from a Topology.
class DeviceEntryList {
public:
    /// Encodes every node of `topology` (CPUs and GPUs, in index order). Only PCIe and XGMI
    /// io_links are kept, as the reference plugin does.
    explicit DeviceEntryList(const Topology& topology);
    DeviceEntryList(const DeviceEntryList&) = delete;
    DeviceEntryList& operator=(const DeviceEntryList&) = delete;

    /// Array of pointers suitable for a repeated field.
    KfdDeviceEntry** data() { return pointers_.data(); }
    size_t size() const { return pointers_.size(); }
    size_t gpuCount() const { return gpus_; }
    size_t cpuCount() const { return pointers_.size() - gpus_; }

private:
    std::vector<std::unique_ptr<KfdDeviceEntry>> entries_;
    std::vector<std::vector<std::unique_ptr<DevIolink>>> links_;
    std::vector<std::vector<DevIolink*>> linkPointers_;
    std::vector<KfdDeviceEntry*> pointers_;
    size_t gpus_ = 0;
};

/// Decodes device entries into a Topology. Entries written by older writers may lack fields;
/// missing numeric fields become absent properties. Fails on duplicate node ids or gpu_ids.
Result<Topology> topologyFromDeviceEntries(KfdDeviceEntry* const* entries, size_t count,
                                           const std::string& source);

/// Writes `amdgpu-topology.img`.
Result<void> writeTopologyImage(ImageStore& store, const Topology& topology);
/// Reads `amdgpu-topology.img`.
Result<Topology> readTopologyImage(ImageStore& store);

} // namespace formats
