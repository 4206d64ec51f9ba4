#include "formats/topology_codec.h"

#include "formats/proto_image.h"

#include <cstddef>
#include <set>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using topology::Link;
using topology::LinkType;
using topology::MemBank;
using topology::Node;
using topology::Topology;

namespace {

/// One uint32 field of kfd_device_entry and the sysfs key it carries.
struct U32Field {
    const char* key;
    size_t hasOffset;
    size_t valueOffset;
};

#define HAL_U32_FIELD(field)                                                                       \
    { #field, offsetof(KfdDeviceEntry, has_##field), offsetof(KfdDeviceEntry, field) }

const U32Field kU32Fields[] = {
    HAL_U32_FIELD(cpu_cores_count),
    HAL_U32_FIELD(simd_count),
    HAL_U32_FIELD(mem_banks_count),
    HAL_U32_FIELD(caches_count),
    HAL_U32_FIELD(io_links_count),
    HAL_U32_FIELD(max_waves_per_simd),
    HAL_U32_FIELD(lds_size_in_kb),
    HAL_U32_FIELD(gds_size_in_kb),
    HAL_U32_FIELD(num_gws),
    HAL_U32_FIELD(wave_front_size),
    HAL_U32_FIELD(array_count),
    HAL_U32_FIELD(simd_arrays_per_engine),
    HAL_U32_FIELD(cu_per_simd_array),
    HAL_U32_FIELD(simd_per_cu),
    HAL_U32_FIELD(max_slots_scratch_cu),
    HAL_U32_FIELD(vendor_id),
    HAL_U32_FIELD(device_id),
    HAL_U32_FIELD(domain),
    HAL_U32_FIELD(drm_render_minor),
    HAL_U32_FIELD(num_sdma_engines),
    HAL_U32_FIELD(num_sdma_xgmi_engines),
    HAL_U32_FIELD(num_sdma_queues_per_engine),
    HAL_U32_FIELD(num_cp_queues),
    HAL_U32_FIELD(fw_version),
    HAL_U32_FIELD(capability),
    HAL_U32_FIELD(sdma_fw_version),
    HAL_U32_FIELD(location_id),
    HAL_U32_FIELD(num_xcc),
    HAL_U32_FIELD(gfx_target_version),
};

#undef HAL_U32_FIELD

// Fields CRIU's reader declares `required`: always written, as 0 when the node lacks the key.
const std::set<std::string> kRequiredByCriu = {"cpu_cores_count",
                                               "simd_count",
                                               "mem_banks_count",
                                               "caches_count",
                                               "io_links_count",
                                               "max_waves_per_simd",
                                               "lds_size_in_kb",
                                               "gds_size_in_kb",
                                               "num_gws",
                                               "wave_front_size",
                                               "array_count",
                                               "simd_arrays_per_engine",
                                               "cu_per_simd_array",
                                               "simd_per_cu",
                                               "max_slots_scratch_cu",
                                               "vendor_id",
                                               "device_id",
                                               "domain",
                                               "drm_render_minor",
                                               "num_sdma_engines",
                                               "num_sdma_xgmi_engines",
                                               "num_sdma_queues_per_engine",
                                               "num_cp_queues",
                                               "fw_version",
                                               "capability",
                                               "sdma_fw_version"};

uint32_t& u32At(KfdDeviceEntry* e, size_t offset) {
    return *reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(e) + offset);
}
protobuf_c_boolean& hasAt(KfdDeviceEntry* e, size_t offset) {
    return *reinterpret_cast<protobuf_c_boolean*>(reinterpret_cast<char*>(e) + offset);
}

bool isPublicVram(const Node& node) {
    for (const MemBank& bank : node.memBanks)
        if (bank.heapType == 1)
            return true;
    return node.memBanks.empty() && node.vramSize() > 0;
}

} // namespace

DeviceEntryList::DeviceEntryList(const Topology& topology) {
    for (const Node& node : topology.nodes) {
        auto entry = std::make_unique<KfdDeviceEntry>();
        kfd_device_entry__init(entry.get());
        KfdDeviceEntry* e = entry.get();
        e->has_node_id = true;
        e->node_id = node.index;
        e->has_gpu_id = true;
        e->gpu_id = node.isGpu() ? node.gpuId : 0;
        for (const U32Field& f : kU32Fields) {
            if (node.has(f.key) || kRequiredByCriu.count(f.key)) {
                hasAt(e, f.hasOffset) = true;
                u32At(e, f.valueOffset) = static_cast<uint32_t>(node.prop(f.key));
            }
        }
        e->has_hive_id = true;
        e->hive_id = node.hiveId();
        e->has_vram_public = true;
        e->vram_public = isPublicVram(node) ? 1 : 0;
        e->has_vram_size = true;
        e->vram_size = node.vramSize();

        std::vector<std::unique_ptr<DevIolink>> links;
        std::vector<DevIolink*> linkPtrs;
        for (const Link& link : node.ioLinks) {
            if (link.type != static_cast<uint32_t>(LinkType::PciExpress) &&
                link.type != static_cast<uint32_t>(LinkType::Xgmi))
                continue;
            auto l = std::make_unique<DevIolink>();
            dev_iolink__init(l.get());
            l->has_type = true;
            l->type = link.type;
            l->has_node_to_id = true;
            l->node_to_id = link.nodeTo;
            linkPtrs.push_back(l.get());
            links.push_back(std::move(l));
        }
        e->n_iolinks = linkPtrs.size();
        links_.push_back(std::move(links));
        linkPointers_.push_back(std::move(linkPtrs));
        e->iolinks = linkPointers_.back().empty() ? nullptr : linkPointers_.back().data();
        if (node.isGpu())
            ++gpus_;
        pointers_.push_back(e);
        entries_.push_back(std::move(entry));
    }
}

Result<Topology> topologyFromDeviceEntries(KfdDeviceEntry* const* entries, size_t count,
                                           const std::string& source) {
    Topology topo;
    topo.source = source;
    std::set<uint32_t> nodeIds, gpuIds;
    for (size_t i = 0; i < count; ++i) {
        KfdDeviceEntry* e = entries[i];
        if (!e->has_node_id)
            return makeError(ErrorCode::Image, "%s: device entry %zu has no node_id",
                             source.c_str(), i);
        Node node;
        node.index = e->node_id;
        node.gpuId = e->has_gpu_id ? e->gpu_id : 0;
        if (!nodeIds.insert(node.index).second)
            return makeError(ErrorCode::Image, "%s: node %u appears twice", source.c_str(),
                             node.index);
        if (node.gpuId && !gpuIds.insert(node.gpuId).second)
            return makeError(ErrorCode::Image, "%s: gpu_id 0x%04x appears twice", source.c_str(),
                             node.gpuId);
        for (const U32Field& f : kU32Fields)
            if (hasAt(e, f.hasOffset))
                node.set(f.key, u32At(e, f.valueOffset));
        if (e->has_hive_id)
            node.set("hive_id", e->hive_id);
        if (e->has_vram_size && e->vram_size) {
            node.set("local_mem_size", e->vram_size);
            MemBank bank;
            bank.heapType = (e->has_vram_public && e->vram_public) ? 1 : 2;
            bank.sizeInBytes = e->vram_size;
            bank.properties["heap_type"] = bank.heapType;
            bank.properties["size_in_bytes"] = bank.sizeInBytes;
            node.memBanks.push_back(bank);
        }
        for (size_t l = 0; l < e->n_iolinks; ++l) {
            Link link;
            link.type = e->iolinks[l]->type;
            link.nodeFrom = node.index;
            link.nodeTo = e->iolinks[l]->node_to_id;
            link.properties["type"] = link.type;
            link.properties["node_from"] = link.nodeFrom;
            link.properties["node_to"] = link.nodeTo;
            node.ioLinks.push_back(link);
        }
        topo.nodes.push_back(std::move(node));
    }
    return topo;
}

Result<void> writeTopologyImage(ImageStore& store, const Topology& topology) {
    DeviceEntryList list(topology);
    AmdgpuDevinfo info;
    amdgpu_devinfo__init(&info);
    info.has_num_of_devices = true;
    info.num_of_devices = static_cast<uint32_t>(list.size());
    info.n_device_entries = list.size();
    info.device_entries = list.data();
    return writeProtoImage(store, kTopologyImageName, &info.base);
}

Result<Topology> readTopologyImage(ImageStore& store) {
    HAL_TRY_ASSIGN(auto info, readProtoImage<AmdgpuDevinfo>(store, kTopologyImageName,
                                                            &amdgpu_devinfo__descriptor));
    if (info->has_num_of_devices && info->num_of_devices != info->n_device_entries)
        return makeError(ErrorCode::Image, "%s announces %u devices but holds %zu",
                         kTopologyImageName, info->num_of_devices, info->n_device_entries);
    return topologyFromDeviceEntries(info->device_entries, info->n_device_entries,
                                     kTopologyImageName);
}

} // namespace formats
