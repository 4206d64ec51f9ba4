#pragma once
/// \file
/// The topology model shared by every backend, the matcher and the image codecs: the nodes of a
/// machine (CPUs, GPUs, APUs, GPU partitions), their memory banks, caches and links, as KFD's sysfs
/// tree describes them (kernel-uapi.md). Properties are kept by their sysfs key so that every key
/// of every kernel version survives a round trip; typed accessors give the ones the code uses.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace topology {

/// io_link / p2p_link types (kfd_sysfs.h: CRAT_IOLINK_TYPE_*).
enum class LinkType : uint32_t {
    Undefined = 0,
    HyperTransport = 1,
    PciExpress = 2,
    Amba = 3,
    Mipi = 4,
    QpiV11 = 5,
    Infiniband = 8,
    Xgmi = 11,
};

/// One link from `nodeFrom` to `nodeTo` (sysfs node indices), with all its sysfs properties.
struct Link {
    uint32_t type = 0;     ///< LinkType value.
    uint32_t nodeFrom = 0; ///< sysfs index of the source node.
    uint32_t nodeTo = 0;   ///< sysfs index of the destination node.
    uint32_t weight = 0;
    std::map<std::string, uint64_t> properties; ///< every key of the properties file.
    /// Lines of the properties file whose value is not an unsigned number, kept verbatim.
    std::map<std::string, std::string> textProperties;
};

/// One memory bank (nodes/N/mem_banks/M/properties).
struct MemBank {
    uint32_t heapType = 0; ///< 0 system, 1 FB public, 2 FB private, 3 GDS, 4 LDS, 5 scratch.
    uint64_t sizeInBytes = 0;
    std::map<std::string, uint64_t> properties;
    /// Lines whose value is not an unsigned number, kept verbatim.
    std::map<std::string, std::string> textProperties;
    /// Contents of mem_banks/M/used_memory when present (it changes at run time).
    std::optional<uint64_t> usedMemory;
};

/// One cache (nodes/N/caches/C/properties).
struct Cache {
    std::map<std::string, uint64_t> properties;
    /// Lines whose value is not an unsigned number (e.g. "sibling_map 1,0,0"), kept verbatim.
    std::map<std::string, std::string> textProperties;
    /// The directory name under caches/ (kernels number them sparsely); -1 = use the position.
    int dirIndex = -1;
};

/// A topology node: a CPU, a GPU (or GPU partition), or an APU with both.
struct Node {
    uint32_t index = 0; ///< sysfs node index (nodes/<index>).
    uint32_t gpuId = 0; ///< 0 for CPU nodes.
    std::string name;   ///< nodes/N/name, may be empty.
    /// Every "key value" line of nodes/N/properties. Values are unsigned 64-bit.
    std::map<std::string, uint64_t> properties;
    std::vector<MemBank> memBanks;
    std::vector<Cache> caches;
    std::vector<Link> ioLinks;
    std::vector<Link> p2pLinks;
    /// Lines of nodes/N/properties whose value is not an unsigned number, kept verbatim.
    std::map<std::string, std::string> textProperties;
    /// True when gpu_id did not come from a gpu_id file but was derived (see Topology::notes).
    bool syntheticGpuId = false;

    /// A property by sysfs key, or `fallback` when the key is absent.
    uint64_t prop(const std::string& key, uint64_t fallback = 0) const;
    /// True when the key is present.
    bool has(const std::string& key) const { return properties.count(key) != 0; }
    /// Sets a property.
    void set(const std::string& key, uint64_t value) { properties[key] = value; }

    /// GPU nodes have SIMDs and a nonzero gpu_id (an APU node is both CPU and GPU).
    bool isGpu() const { return gpuId != 0 && prop("simd_count") > 0; }
    /// CPU nodes have CPU cores (an APU node is both).
    bool isCpu() const { return prop("cpu_cores_count") > 0; }
    /// Usable VRAM: local_mem_size when nonzero, else the sum of FB (public+private) mem_banks.
    uint64_t vramSize() const;
    /// The render node minor (drm_render_minor), or -1 when unknown.
    int renderMinor() const;
    /// hive_id, 0 when not in an XGMI hive.
    uint64_t hiveId() const { return prop("hive_id"); }
};

/// A whole machine's topology.
struct Topology {
    std::vector<Node> nodes;
    /// Nodes that could not be read, with the reason ("node 3: properties: Permission denied").
    std::vector<std::string> skipped;
    /// Where it came from (a sysfs root, an image file name), for messages.
    std::string source;
    /// Warnings about what was read that are not skipped nodes: derived gpu_ids, renumbered
    /// duplicate gpu_ids, links to nodes that do not exist.
    std::vector<std::string> notes;
    /// Contents of generation_id, when present.
    std::optional<uint64_t> generationId;
    /// "key value" lines of system_properties (platform_oem, platform_id, platform_rev).
    std::map<std::string, uint64_t> systemProperties;

    /// GPU nodes in index order.
    std::vector<const Node*> gpus() const;
    /// CPU nodes (including APU nodes) in index order.
    std::vector<const Node*> cpus() const;
    /// The node with this gpu_id, or nullptr.
    const Node* findGpu(uint32_t gpuId) const;
    /// The node with this sysfs index, or nullptr.
    const Node* findIndex(uint32_t index) const;
    /// The GPU node with this render minor, or nullptr.
    const Node* findRenderMinor(int minor) const;
    /// Distinct nonzero hive_ids of GPU nodes, ascending.
    std::vector<uint64_t> hiveIds() const;
};

/// "0x1a2b": a gpu_id as messages and logs print it.
std::string gpuIdHex(uint32_t gpuId);

/// `topo` with only the GPUs whose render minor is in `minors` (and every CPU node); links to
/// the nodes left out are dropped. A checkpoint records the GPUs its processes used, so that a
/// restore needs only those (a container may see no others).
Topology usedGpusOnly(const Topology& topo, const std::set<int>& minors);

} // namespace topology
