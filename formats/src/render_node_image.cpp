#include "formats/render_node_image.h"

#include "formats/proto_image.h"

#include "criu-amdgpu.pb-c.h"

#include <memory>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::success;
using content::ContentChecksum;
using content::DigestKind;

Result<void> writeRenderNodeImage(ImageStore& store, const RenderNodeImage& image) {
    std::vector<::DrmBoEntry> bos(image.bos.size());
    std::vector<::DrmBoEntry*> boPtrs;
    std::vector<std::vector<::DrmVmEntry>> vms(image.bos.size());
    std::vector<std::vector<::DrmVmEntry*>> vmPtrs(image.bos.size());
    for (size_t i = 0; i < image.bos.size(); ++i) {
        const DrmBoEntry& in = image.bos[i];
        ::DrmBoEntry* b = &bos[i];
        drm_bo_entry__init(b);
        b->has_addr = b->has_size = b->has_offset = b->has_alloc_flags = b->has_alignment = true;
        b->has_preferred_domains = b->has_handle = b->has_is_import = b->has_num_of_vms = true;
        b->addr = in.addr;
        b->size = in.size;
        b->offset = in.offset;
        b->alloc_flags = in.allocFlags;
        b->alignment = in.alignment;
        b->preferred_domains = in.preferredDomains;
        b->handle = in.handle;
        b->is_import = in.isImport ? 1 : 0;
        b->num_of_vms = static_cast<uint32_t>(in.vms.size());
        if (in.checksum && in.checksum->kind == DigestKind::Xxh3_64) {
            b->has_contents_xxh3_64 = true;
            b->contents_xxh3_64 = in.checksum->value;
        } else if (in.checksum) {
            b->has_contents_fnv1a64 = true;
            b->contents_fnv1a64 = in.checksum->value;
        }
        if (in.sharing) {
            b->has_share_key = b->has_share_follower = true;
            b->share_key = in.sharing->key;
            b->share_follower = in.sharing->follower;
            b->has_share_owner_file = in.sharing->ownerFile != 0;
            b->share_owner_file = in.sharing->ownerFile;
        }
        vms[i].resize(in.vms.size());
        for (size_t v = 0; v < in.vms.size(); ++v) {
            ::DrmVmEntry* e = &vms[i][v];
            drm_vm_entry__init(e);
            e->has_addr = e->has_size = e->has_offset = e->has_flags = true;
            e->addr = in.vms[v].addr;
            e->size = in.vms[v].size;
            e->offset = in.vms[v].offset;
            e->flags = in.vms[v].flags;
            vmPtrs[i].push_back(e);
        }
        b->n_vm_entries = vmPtrs[i].size();
        b->vm_entries = vmPtrs[i].empty() ? nullptr : vmPtrs[i].data();
        boPtrs.push_back(b);
    }
    std::vector<::DrmCtxEntry> contexts(image.contexts.size());
    std::vector<::DrmCtxEntry*> contextPtrs;
    for (size_t i = 0; i < image.contexts.size(); ++i) {
        ::DrmCtxEntry* c = &contexts[i];
        drm_ctx_entry__init(c);
        c->has_id = c->has_query2_flags = true;
        c->id = image.contexts[i].id;
        c->query2_flags = image.contexts[i].query2Flags;
        contextPtrs.push_back(c);
    }
    std::vector<::DrmSyncobjEntry> syncobjs(image.syncobjs.size());
    std::vector<::DrmSyncobjEntry*> syncobjPtrs;
    for (size_t i = 0; i < image.syncobjs.size(); ++i) {
        const DrmSyncobjEntry& in = image.syncobjs[i];
        ::DrmSyncobjEntry* e = &syncobjs[i];
        drm_syncobj_entry__init(e);
        e->has_handle = e->has_signaled = true;
        e->handle = in.handle;
        e->signaled = in.signaled;
        e->has_timeline_point = in.timelinePoint.has_value();
        e->timeline_point = in.timelinePoint.value_or(0);
        syncobjPtrs.push_back(e);
    }
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.n_ctx_entries = contextPtrs.size();
    rn.ctx_entries = contextPtrs.empty() ? nullptr : contextPtrs.data();
    rn.n_syncobj_entries = syncobjPtrs.size();
    rn.syncobj_entries = syncobjPtrs.empty() ? nullptr : syncobjPtrs.data();
    rn.has_gpu_id = rn.has_id = rn.has_drm_render_minor = rn.has_num_of_bos = true;
    rn.gpu_id = image.gpuId;
    rn.id = image.id;
    rn.drm_render_minor = image.renderMinor;
    rn.num_of_bos = image.bos.size();
    rn.n_bo_entries = boPtrs.size();
    rn.bo_entries = boPtrs.empty() ? nullptr : boPtrs.data();
    if (!image.privData.empty()) {
        rn.has_priv_data = true;
        rn.priv_data.len = image.privData.size();
        rn.priv_data.data = reinterpret_cast<uint8_t*>(const_cast<char*>(image.privData.data()));
    }
    return writeProtoImage(store, renderNodeImageName(image.id), &rn.base);
}

Result<RenderNodeImage> readRenderNodeImage(ImageStore& store, uint32_t id) {
    std::string name = renderNodeImageName(id);
    HAL_TRY_ASSIGN(auto rn,
                   readProtoImage<CriuRenderNode>(store, name, &criu_render_node__descriptor));
    if (!rn->has_gpu_id)
        return makeError(ErrorCode::Image, "%s lacks gpu_id, which every writer records",
                         name.c_str());
    RenderNodeImage out;
    out.gpuId = rn->gpu_id;
    out.id = rn->has_id ? rn->id : id;
    out.renderMinor = rn->drm_render_minor;
    out.legacyGpuIdOnly = !rn->has_num_of_bos && rn->n_bo_entries == 0;
    if (rn->has_num_of_bos && rn->num_of_bos != rn->n_bo_entries)
        return makeError(ErrorCode::Image, "%s announces %llu BOs but holds %zu", name.c_str(),
                         static_cast<unsigned long long>(rn->num_of_bos), rn->n_bo_entries);
    for (size_t i = 0; i < rn->n_bo_entries; ++i) {
        const ::DrmBoEntry* b = rn->bo_entries[i];
        if (!b->has_size || !b->has_handle)
            return makeError(ErrorCode::Image, "%s: BO %zu lacks its %s", name.c_str(), i,
                             b->has_size ? "handle" : "size");
        DrmBoEntry bo;
        bo.addr = b->addr;
        bo.size = b->size;
        bo.offset = b->offset;
        bo.allocFlags = b->alloc_flags;
        bo.alignment = b->alignment;
        bo.preferredDomains = b->preferred_domains;
        bo.handle = b->handle;
        bo.isImport = b->is_import != 0;
        if (b->has_contents_xxh3_64)
            bo.checksum = ContentChecksum{DigestKind::Xxh3_64, b->contents_xxh3_64};
        else if (b->has_contents_fnv1a64)
            bo.checksum = ContentChecksum{DigestKind::Fnv1a64, b->contents_fnv1a64};
        if (b->has_share_key)
            bo.sharing = BoSharing{b->share_key, b->has_share_follower && b->share_follower,
                                   b->has_share_owner_file ? b->share_owner_file : 0u};
        else if (b->has_share_follower)
            return makeError(ErrorCode::Image,
                             "%s: BO %zu is marked share_follower but has no "
                             "share_key",
                             name.c_str(), i);
        if (b->has_num_of_vms && b->num_of_vms != b->n_vm_entries)
            return makeError(ErrorCode::Image, "%s: BO %zu announces %u mappings but holds %zu",
                             name.c_str(), i, b->num_of_vms, b->n_vm_entries);
        for (size_t v = 0; v < b->n_vm_entries; ++v) {
            const ::DrmVmEntry* e = b->vm_entries[v];
            bo.vms.push_back(DrmVmEntry{e->addr, e->size, e->offset, e->flags});
        }
        out.bos.push_back(std::move(bo));
    }
    for (size_t i = 0; i < rn->n_ctx_entries; ++i) {
        const ::DrmCtxEntry* c = rn->ctx_entries[i];
        if (!c->has_id)
            return makeError(ErrorCode::Image, "%s: context %zu (ctx_entries) lacks its id",
                             name.c_str(), i);
        out.contexts.push_back(DrmCtxEntry{c->id, c->query2_flags});
    }
    for (size_t i = 0; i < rn->n_syncobj_entries; ++i) {
        const ::DrmSyncobjEntry* e = rn->syncobj_entries[i];
        if (!e->has_handle)
            return makeError(ErrorCode::Image, "%s: syncobj %zu (syncobj_entries) lacks its handle",
                             name.c_str(), i);
        if (e->has_timeline_point && e->signaled)
            return makeError(ErrorCode::Image,
                             "%s: syncobj %zu (handle %u) has both a timeline_point and "
                             "signaled: a syncobj holds a timeline or a binary fence",
                             name.c_str(), i, e->handle);
        DrmSyncobjEntry syncobj;
        syncobj.handle = e->handle;
        syncobj.signaled = e->signaled;
        if (e->has_timeline_point)
            syncobj.timelinePoint = e->timeline_point;
        out.syncobjs.push_back(syncobj);
    }
    if (rn->has_priv_data)
        out.privData.assign(reinterpret_cast<const char*>(rn->priv_data.data), rn->priv_data.len);
    return out;
}

Result<void> checkShareOwnersPresent(ImageStore& store, const RenderNodeImage& image) {
    for (size_t i = 0; i < image.bos.size(); ++i) {
        const std::optional<BoSharing>& sharing = image.bos[i].sharing;
        if (!sharing || !sharing->follower || !sharing->ownerFile)
            continue;
        std::string owner = renderNodeImageName(sharing->ownerFile);
        if (!store.exists(owner))
            return makeError(ErrorCode::Image,
                             "BO %zu (handle %u) of %s shares memory 0x%llx with a BO of %s, "
                             "which is not in the checkpoint: its process was not dumped with "
                             "this one, or the image was removed",
                             i, image.bos[i].handle, renderNodeImageName(image.id).c_str(),
                             static_cast<unsigned long long>(sharing->key), owner.c_str());
    }
    return success();
}

} // namespace formats
