#include "kfd/kfd_images.h"

#include "formats/proto_image.h"
#include "formats/topology_codec.h"

#include "criu-amdgpu.pb-c.h"

#include <map>
#include <memory>
#include <set>

namespace kfd {

base::Result<void> writeKfdImage(formats::ImageStore& store, const std::string& name,
                                 const KfdImage& image) {
    formats::DeviceEntryList entries(image.topology);
    std::vector<KfdBoEntry> bos(image.bos.size());
    std::vector<KfdBoEntry*> boPtrs;
    for (size_t i = 0; i < image.bos.size(); ++i) {
        KfdBoEntry& e = bos[i];
        kfd_bo_entry__init(&e);
        const BoRecord& b = image.bos[i];
        e.has_addr = e.has_size = e.has_offset = e.has_alloc_flags = e.has_gpu_id = true;
        e.addr = b.addr;
        e.size = b.size;
        e.offset = b.offset;
        e.alloc_flags = b.allocFlags;
        e.gpu_id = b.gpuId;
        // CRIU's development branch requires `handle` (a GEM handle it matches dmabuf imports
        // with); KFD BOs have none this backend knows, so it writes the kernel's "none".
        e.has_handle = true;
        e.handle = kInvalidFd;
        if (b.checksum) {
            e.has_xxh3_64 = true;
            e.xxh3_64 = b.checksum->value;
        }
        boPtrs.push_back(&e);
    }
    std::vector<PagesChecksum> sums(image.checksums.size());
    std::vector<PagesChecksum*> sumPtrs;
    for (size_t i = 0; i < image.checksums.size(); ++i) {
        pages_checksum__init(&sums[i]);
        const PagesDigest& d = image.checksums[i];
        sums[i].has_gpu_id = sums[i].has_size = true;
        sums[i].gpu_id = d.gpuId;
        sums[i].size = d.size;
        if (d.checksum.kind == content::DigestKind::Xxh3_64) {
            sums[i].has_xxh3_64 = true;
            sums[i].xxh3_64 = d.checksum.value;
        } else {
            sums[i].has_fnv1a64 = true;
            sums[i].fnv1a64 = d.checksum.value;
        }
        sumPtrs.push_back(&sums[i]);
    }
    CriuKfd msg;
    criu_kfd__init(&msg);
    msg.has_pid = msg.has_num_of_gpus = msg.has_num_of_cpus = msg.has_num_of_bos = true;
    msg.has_num_of_objects = msg.has_shared_mem_size = msg.has_shared_mem_magic = true;
    msg.has_priv_data = true;
    msg.pid = image.pid;
    msg.num_of_gpus = static_cast<uint32_t>(entries.gpuCount());
    msg.num_of_cpus = static_cast<uint32_t>(entries.cpuCount());
    msg.n_device_entries = entries.size();
    msg.device_entries = entries.data();
    msg.num_of_bos = image.bos.size();
    msg.n_bo_entries = boPtrs.size();
    msg.bo_entries = boPtrs.data();
    msg.num_of_objects = image.numObjects;
    msg.shared_mem_size = image.sharedMemSize;
    msg.shared_mem_magic = image.sharedMemMagic;
    msg.priv_data.len = image.privData.size();
    msg.priv_data.data = const_cast<uint8_t*>(image.privData.data());
    msg.n_pages_checksums = sumPtrs.size();
    msg.pages_checksums = sumPtrs.data();
    if (image.layout != ContentsLayout::PagesPerGpu) {
        msg.has_contents_layout = true;
        msg.contents_layout = static_cast<uint32_t>(image.layout);
    }
    return formats::writeProtoImage(store, name, &msg.base);
}

base::Result<KfdImage> readKfdImage(formats::ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(auto msg, formats::readProtoImage<CriuKfd>(store, name, &criu_kfd__descriptor));
    auto bad = [&](const std::string& why) {
        return base::makeError(base::ErrorCode::Image, "image %s is inconsistent: %s", name.c_str(),
                               why.c_str());
    };
    if (!msg->has_num_of_bos)
        return bad("it lacks num_of_bos");
    if (msg->num_of_bos != msg->n_bo_entries)
        return bad(base::strFormat("num_of_bos is %llu but it holds %zu BO entries",
                                   static_cast<unsigned long long>(msg->num_of_bos),
                                   msg->n_bo_entries));
    if (msg->has_num_of_gpus && msg->has_num_of_cpus &&
        uint64_t{msg->num_of_gpus} + msg->num_of_cpus != msg->n_device_entries)
        return bad(base::strFormat("num_of_gpus %u + num_of_cpus %u != %zu device entries",
                                   msg->num_of_gpus, msg->num_of_cpus, msg->n_device_entries));
    if (!msg->has_priv_data)
        return bad("it lacks priv_data (the kernel's private state of the process)");
    if (msg->contents_layout > static_cast<uint32_t>(ContentsLayout::PerBo))
        return bad(base::strFormat("contents_layout %u is none this version knows (0: pages file "
                                   "per GPU, 1: a file per BO)",
                                   msg->contents_layout));
    KfdImage image;
    image.layout = static_cast<ContentsLayout>(msg->contents_layout);
    HAL_TRY_ASSIGN_CONTEXT(
        image.topology,
        formats::topologyFromDeviceEntries(msg->device_entries, msg->n_device_entries, name),
        "while reading the device entries of %s", name.c_str());
    if (image.topology.gpus().empty())
        return bad("it lists no GPU");
    image.pid = msg->pid;
    image.numObjects = msg->num_of_objects;
    image.sharedMemSize = msg->shared_mem_size;
    image.sharedMemMagic = msg->shared_mem_magic;
    image.privData.assign(msg->priv_data.data, msg->priv_data.data + msg->priv_data.len);
    for (size_t i = 0; i < msg->n_bo_entries; ++i) {
        const KfdBoEntry* e = msg->bo_entries[i];
        if (!e->has_size || !e->has_gpu_id || !e->has_alloc_flags)
            return bad(base::strFormat("BO %zu lacks its size, gpu_id or alloc_flags", i));
        if (!image.topology.findGpu(e->gpu_id))
            return bad(base::strFormat("BO %zu is on GPU %s, which is not in its device list", i,
                                       topology::gpuIdHex(e->gpu_id).c_str()));
        BoRecord b;
        b.addr = e->addr;
        b.size = e->size;
        b.offset = e->offset;
        b.gpuId = e->gpu_id;
        b.allocFlags = e->alloc_flags;
        if (e->has_xxh3_64)
            b.checksum = content::ContentChecksum{content::DigestKind::Xxh3_64, e->xxh3_64};
        image.bos.push_back(b);
    }
    for (size_t i = 0; i < msg->n_pages_checksums; ++i) {
        const PagesChecksum* c = msg->pages_checksums[i];
        if (!image.topology.findGpu(c->gpu_id))
            return bad(base::strFormat("a pages checksum names GPU %s, which is not in its "
                                       "device list",
                                       topology::gpuIdHex(c->gpu_id).c_str()));
        if (c->has_xxh3_64)
            image.checksums.push_back(
                {c->gpu_id, c->size, {content::DigestKind::Xxh3_64, c->xxh3_64}});
        else if (c->has_fnv1a64)
            image.checksums.push_back(
                {c->gpu_id, c->size, {content::DigestKind::Fnv1a64, c->fnv1a64}});
    }
    return image;
}

hal::BoKey boKeyOf(const BoRecord& bo) {
    return hal::BoKey{bo.gpuId, bo.addr, bo.size};
}

base::Result<formats::RenderNodeImage> readRenderImageWithoutBos(formats::ImageStore& store,
                                                                 uint32_t id) {
    HAL_TRY_ASSIGN(formats::RenderNodeImage image, formats::readRenderNodeImage(store, id));
    if (!image.bos.empty())
        return base::makeError(
            base::ErrorCode::Image,
            "%s lists %zu buffer objects of render node renderD%u (GPU %s), which the kfd "
            "backend cannot recreate: it restores render nodes without buffers. Images like this "
            "are written by the amdgpu-drm backend (restore them with backends=amdgpu-drm; it is "
            "chosen by itself when the checkpoint holds %s and it is usable here) or by CRIU's "
            "development-branch plugin beside a KFD checkpoint (not supported)",
            formats::renderNodeImageName(id).c_str(), image.bos.size(), image.renderMinor,
            topology::gpuIdHex(image.gpuId).c_str(), formats::kTopologyImageName);
    return image;
}

base::Result<std::vector<GpuPages>> pagesOfGpus(const KfdImage& image) {
    std::vector<GpuPages> out;
    for (const topology::Node* gpu : image.topology.gpus()) {
        GpuPages pages;
        pages.gpuId = gpu->gpuId;
        for (size_t i = 0; i < image.bos.size(); ++i) {
            const BoRecord& bo = image.bos[i];
            if (bo.gpuId != gpu->gpuId || !boHasContents(bo.allocFlags))
                continue;
            HAL_TRY(addBoSize(&pages.bytes, bo.size, gpu->gpuId, i));
            pages.bos.push_back(i);
        }
        out.push_back(std::move(pages));
    }
    return out;
}

base::Result<void> checkPagesChecksums(uint32_t id, const KfdImage& image) {
    std::map<uint32_t, const PagesDigest*> sums;
    for (const PagesDigest& d : image.checksums)
        sums[d.gpuId] = &d;
    HAL_TRY_ASSIGN(std::vector<GpuPages> gpus, pagesOfGpus(image));
    for (const GpuPages& gpu : gpus) {
        auto sum = sums.find(gpu.gpuId);
        if (sum != sums.end() && sum->second->size != gpu.bytes)
            return base::makeError(base::ErrorCode::Image,
                                   "pages file %s: its checksum covers %llu bytes, its BOs %llu",
                                   hal::gpuPagesFileName({id, gpu.gpuId}).c_str(),
                                   static_cast<unsigned long long>(sum->second->size),
                                   static_cast<unsigned long long>(gpu.bytes));
    }
    return base::success();
}

} // namespace kfd
