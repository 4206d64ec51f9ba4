#pragma once
/// \file
/// How KFD makes a GPU's gpu_id (kfd_topology.c, kfd_generate_gpu_id), for the places that must
/// derive one themselves: a sysfs node without a gpu_id file, a GPU seen only through its render
/// node. One implementation of the hash, on Boost.CRC.

#include "topology/topology.h"

#include <cstdint>
#include <functional>

namespace topology {

/// The values KFD hashes, in the order it lays them out as eight little-endian 32-bit words.
struct KfdGpuIdInputs {
    uint32_t devfn = 0;           ///< PCI device/function (the low byte of location_id)
    uint32_t subsystemVendor = 0; ///< PCI subsystem vendor id (not in KFD's sysfs properties)
    uint32_t subsystemDevice = 0; ///< PCI subsystem device id (not in KFD's sysfs properties)
    uint32_t domain = 0;          ///< PCI domain
    uint32_t deviceId = 0;        ///< PCI device id
    uint32_t bus = 0;             ///< PCI bus number
    uint64_t localMemSize = 0;    ///< private + public VRAM of the node (partition), in bytes
    uint32_t xccStart = 0;        ///< first XCC of the node: ffs(xcc_mask) - 1
    uint32_t numXcc = 1;          ///< XCCs of the node: popcount(xcc_mask)
};

/// KFD's hash of a GPU: the Linux kernel's crc16() over the eight words, started at 0, masked to
/// KFD_GPU_ID_HASH_WIDTH (16) bits. Linux's crc16 is CRC-16/ARC (polynomial 0x8005, reflected in
/// and out, initial value as given, no final xor), the one Boost names crc_16_type. May be 0;
/// kfdUniqueGpuId turns it into the gpu_id.
uint16_t kfdGpuIdHash(const KfdGpuIdInputs& inputs);

/// KFD's collision rule applied to a hash: 0 becomes 1, and while the id is taken it is
/// incremented within 16 bits (wrapping to 1). Unlike the kernel's loop this one ends: when every
/// 16-bit id is taken it returns the first free id above 0xffff (0 only if no 32-bit id is free).
uint32_t kfdUniqueGpuId(uint32_t hash, const std::function<bool(uint32_t)>& taken);

/// Gives every GPU node of `topology` that has no gpu_id, or one an earlier node already holds,
/// a derived one: KFD's recipe applied to what its properties tell (location_id, domain,
/// device_id, VRAM size, num_xcc; the subsystem ids are not in sysfs, so the id is KFD-like, not
/// KFD's), made unique by kfdUniqueGpuId. Marks such nodes syntheticGpuId and adds a note each.
void completeGpuIds(Topology* topology);

} // namespace topology
