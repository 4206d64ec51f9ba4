#include "kfd/kfd_images.h"

#include "hal/content_stream.h"
#include "hal/proto_image.h"
#include "hal/topology_codec.h"

#include "criu-amdgpu.pb-c.h"

#include <map>
#include <memory>
#include <set>

namespace kfd {

std::string kfdImageName(uint32_t id) { return hal::strFormat("amdgpu-kfd-%u.img", id); }
std::string renderImageName(uint32_t id) { return hal::strFormat("amdgpu-renderD-%u.img", id); }
std::string pagesImageName(uint32_t id, uint32_t gpuId) {
    return hal::strFormat("amdgpu-pages-%u-%04x.img", id, gpuId);
}

hal::Result<void> writeKfdImage(hal::ImageStore& store, const std::string& name,
                                const KfdImage& image) {
    hal::DeviceEntryList entries(image.topology);
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
        boPtrs.push_back(&e);
    }
    std::vector<PagesChecksum> sums(image.checksums.size());
    std::vector<PagesChecksum*> sumPtrs;
    for (size_t i = 0; i < image.checksums.size(); ++i) {
        pages_checksum__init(&sums[i]);
        sums[i].has_gpu_id = sums[i].has_size = sums[i].has_fnv1a64 = true;
        sums[i].gpu_id = image.checksums[i].gpuId;
        sums[i].size = image.checksums[i].size;
        sums[i].fnv1a64 = image.checksums[i].fnv1a64;
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
    return hal::writeProtoImage(store, name, &msg.base);
}

hal::Result<KfdImage> readKfdImage(hal::ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(auto msg, hal::readProtoImage<CriuKfd>(store, name, &criu_kfd__descriptor));
    auto bad = [&](const std::string& why) {
        return hal::makeError(hal::ErrorCode::Image, "image %s is inconsistent: %s", name.c_str(),
                              why.c_str());
    };
    if (!msg->has_num_of_bos)
        return bad("it lacks num_of_bos");
    if (msg->num_of_bos != msg->n_bo_entries)
        return bad(hal::strFormat("num_of_bos is %llu but it holds %zu BO entries",
                                  static_cast<unsigned long long>(msg->num_of_bos),
                                  msg->n_bo_entries));
    if (msg->has_num_of_gpus && msg->has_num_of_cpus &&
        msg->num_of_gpus + msg->num_of_cpus != msg->n_device_entries)
        return bad(hal::strFormat("num_of_gpus %u + num_of_cpus %u != %zu device entries",
                                  msg->num_of_gpus, msg->num_of_cpus, msg->n_device_entries));
    if (!msg->has_priv_data)
        return bad("it lacks priv_data (the kernel's private state of the process)");
    KfdImage image;
    HAL_TRY_ASSIGN_CONTEXT(image.topology,
                           hal::topologyFromDeviceEntries(msg->device_entries,
                                                          msg->n_device_entries, name),
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
            return bad(hal::strFormat("BO %zu lacks its size, gpu_id or alloc_flags", i));
        if (!image.topology.findGpu(e->gpu_id))
            return bad(hal::strFormat("BO %zu is on GPU %s, which is not in its device list", i,
                                      hal::gpuIdHex(e->gpu_id).c_str()));
        BoRecord b;
        b.addr = e->addr;
        b.size = e->size;
        b.offset = e->offset;
        b.gpuId = e->gpu_id;
        b.allocFlags = e->alloc_flags;
        image.bos.push_back(b);
    }
    for (size_t i = 0; i < msg->n_pages_checksums; ++i) {
        const PagesChecksum* c = msg->pages_checksums[i];
        if (!image.topology.findGpu(c->gpu_id))
            return bad(hal::strFormat("a pages checksum names GPU %s, which is not in its "
                                      "device list",
                                      hal::gpuIdHex(c->gpu_id).c_str()));
        image.checksums.push_back({c->gpu_id, c->size, c->fnv1a64});
    }
    return image;
}

hal::Result<void> writeRenderImage(hal::ImageStore& store, const std::string& name, uint32_t id,
                                   uint32_t gpuId, uint32_t renderMinor) {
    CriuRenderNode msg;
    criu_render_node__init(&msg);
    msg.has_gpu_id = msg.has_id = msg.has_drm_render_minor = msg.has_num_of_bos = true;
    msg.gpu_id = gpuId;
    msg.id = id;
    msg.drm_render_minor = renderMinor;
    msg.num_of_bos = 0;
    return hal::writeProtoImage(store, name, &msg.base);
}

hal::Result<RenderImage> readRenderImage(hal::ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(auto msg, hal::readProtoImage<CriuRenderNode>(store, name,
                                                                 &criu_render_node__descriptor));
    if (!msg->has_gpu_id)
        return hal::makeError(hal::ErrorCode::Image, "image %s lacks gpu_id", name.c_str());
    RenderImage r;
    r.gpuId = msg->gpu_id;
    return r;
}

std::vector<std::pair<uint32_t, std::vector<size_t>>> contentBosByGpu(const KfdImage& image) {
    std::vector<std::pair<uint32_t, std::vector<size_t>>> out;
    for (const hal::Node* gpu : image.topology.gpus()) {
        std::vector<size_t> bos;
        for (size_t i = 0; i < image.bos.size(); ++i)
            if (image.bos[i].gpuId == gpu->gpuId && boHasContents(image.bos[i].allocFlags))
                bos.push_back(i);
        if (!bos.empty())
            out.emplace_back(gpu->gpuId, std::move(bos));
    }
    return out;
}

hal::Result<void> checkPagesFiles(hal::ImageStore& store, uint32_t id, const KfdImage& image) {
    std::map<uint32_t, const PagesDigest*> sums;
    for (const PagesDigest& d : image.checksums)
        sums[d.gpuId] = &d;
    for (const auto& [gpuId, bos] : contentBosByGpu(image)) {
        uint64_t need = 0;
        for (size_t i : bos)
            need += image.bos[i].size;
        std::string name = pagesImageName(id, gpuId);
        HAL_TRY_ASSIGN_CONTEXT(auto reader, store.openRead(name),
                               "the BO contents of GPU %s are missing",
                               hal::gpuIdHex(gpuId).c_str());
        int64_t have = reader->size();
        if (have >= 0 && static_cast<uint64_t>(have) < need)
            return hal::makeError(hal::ErrorCode::Image,
                                  "pages file %s is truncated: it holds %lld bytes, the %zu BOs "
                                  "of GPU %s need %llu",
                                  name.c_str(), static_cast<long long>(have), bos.size(),
                                  hal::gpuIdHex(gpuId).c_str(),
                                  static_cast<unsigned long long>(need));
        if (have >= 0 && static_cast<uint64_t>(have) > need)
            return hal::makeError(hal::ErrorCode::Image,
                                  "pages file %s is inconsistent with its image: it holds %lld "
                                  "bytes, the %zu BOs of GPU %s only %llu",
                                  name.c_str(), static_cast<long long>(have), bos.size(),
                                  hal::gpuIdHex(gpuId).c_str(),
                                  static_cast<unsigned long long>(need));
        auto sum = sums.find(gpuId);
        if (sum == sums.end())
            continue;
        if (sum->second->size != need)
            return hal::makeError(hal::ErrorCode::Image,
                                  "pages file %s: its checksum covers %llu bytes, its BOs %llu",
                                  name.c_str(),
                                  static_cast<unsigned long long>(sum->second->size),
                                  static_cast<unsigned long long>(need));
        if (have < 0)
            continue; // a stream can be read once: the copy verifies it on the way
        hal::Fnv1a64 fnv;
        std::vector<std::byte> buf(1 << 20);
        for (uint64_t off = 0; off < need;) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), need - off));
            HAL_TRY(reader->readExact(std::span(buf).first(n)));
            fnv.update(std::span(buf).first(n));
            off += n;
        }
        if (fnv.value() != sum->second->fnv1a64)
            return hal::makeError(hal::ErrorCode::Image,
                                  "pages file %s is corrupt: its FNV-1a 64 is %016llx, the image "
                                  "recorded %016llx",
                                  name.c_str(), static_cast<unsigned long long>(fnv.value()),
                                  static_cast<unsigned long long>(sum->second->fnv1a64));
    }
    return hal::success();
}

} // namespace kfd
