// The fake render node's command submission: AMDGPU_CS of SDMA IBs and AMDGPU_WAIT_CS, after
// amdgpu_cs.c: the context is looked up first (EINVAL), the BO_HANDLES chunk's handles next
// (amdgpu_bo_list_create: ENOENT for one the file does not hold); a job reads its IB and its
// copies through the file's VM, where only the BOs of its list and the VM_ALWAYS_VALID BOs
// (validated with the VM, amdgpu_vm_validate) are resident. What is not is a VM fault, which the
// kernel only logs: the fake records it and the job completes.
#include "fake_render_node.h"

#include "fake_libdrm.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace fakedrm {

const Mapping* FakeKernel::residentMapping(const File& file, uint64_t va, uint64_t bytes,
                                           const std::vector<std::shared_ptr<Bo>>& listed) const {
    for (const Mapping& m : file.vm) {
        if (va < m.addr || va + bytes > m.addr + m.size)
            continue;
        bool resident = (m.bo->flags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID) ||
                        std::find(listed.begin(), listed.end(), m.bo) != listed.end();
        return resident ? &m : nullptr;
    }
    return nullptr;
}

namespace {

/// The BOs of `entries` (bo_info_size bytes each) in `file`: 0, or -ENOENT for a handle the file
/// does not hold (amdgpu_bo_list_create), -EINVAL for an entry size that is not the struct's.
int bosOfList(const File& file, uint64_t entriesPtr, uint32_t count, uint32_t entrySize,
              std::vector<std::shared_ptr<Bo>>* out) {
    if (entrySize != sizeof(drm_amdgpu_bo_list_entry))
        return -EINVAL;
    const auto* entries =
        reinterpret_cast<const drm_amdgpu_bo_list_entry*>(static_cast<uintptr_t>(entriesPtr));
    for (uint32_t e = 0; e < count; ++e) {
        auto bo = file.handles.find(entries[e].bo_handle);
        if (bo == file.handles.end())
            return -ENOENT;
        out->push_back(bo->second);
    }
    return 0;
}

} // namespace

// amdgpu_bo_list_ioctl: CREATE hands out the lowest free list handle from 1 (idr_alloc), UPDATE
// replaces a list's BOs, DESTROY drops it; an unknown list is ENOENT (amdgpu_bo_list_get).
int FakeKernel::boList(File& file, void* arg) {
    auto* a = static_cast<drm_amdgpu_bo_list*>(arg);
    uint32_t op = a->in.operation, handle = a->in.list_handle;
    std::vector<std::shared_ptr<Bo>> bos;
    if (op == AMDGPU_BO_LIST_OP_DESTROY)
        return file.boLists.erase(handle) ? 0 : -ENOENT;
    if (op != AMDGPU_BO_LIST_OP_CREATE && op != AMDGPU_BO_LIST_OP_UPDATE)
        return -EINVAL;
    if (int r = bosOfList(file, a->in.bo_info_ptr, a->in.bo_number, a->in.bo_info_size, &bos);
        r < 0)
        return r;
    if (op == AMDGPU_BO_LIST_OP_UPDATE) {
        auto it = file.boLists.find(handle);
        if (it == file.boLists.end())
            return -ENOENT;
        it->second = std::move(bos);
    } else {
        handle = 1;
        while (file.boLists.count(handle))
            ++handle;
        file.boLists[handle] = std::move(bos);
    }
    *a = {};
    a->out.list_handle = handle;
    return 0;
}

int FakeKernel::commandSubmit(File& file, void* arg) {
    auto* cs = static_cast<drm_amdgpu_cs*>(arg);
    auto ctx = file.contexts.find(cs->in.ctx_id);
    if (ctx == file.contexts.end())
        return -EINVAL;
    const auto* pointers = reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(cs->in.chunks));
    std::optional<drm_amdgpu_cs_chunk_ib> ib;
    std::vector<std::shared_ptr<Bo>> listed;
    std::vector<std::shared_ptr<Syncobj>> signals; // SYNCOBJ_OUT: signaled by the job's fence
    if (cs->in.bo_list_handle) {
        auto list = file.boLists.find(cs->in.bo_list_handle);
        if (list == file.boLists.end())
            return -ENOENT;
        listed = list->second;
    }
    for (uint32_t i = 0; i < cs->in.num_chunks; ++i) {
        const auto* chunk =
            reinterpret_cast<const drm_amdgpu_cs_chunk*>(static_cast<uintptr_t>(pointers[i]));
        const void* data = reinterpret_cast<const void*>(static_cast<uintptr_t>(chunk->chunk_data));
        if (chunk->chunk_id == AMDGPU_CHUNK_ID_IB) {
            if (ib || chunk->length_dw * 4u < sizeof(drm_amdgpu_cs_chunk_ib))
                return -EINVAL;
            ib = *static_cast<const drm_amdgpu_cs_chunk_ib*>(data);
        } else if (chunk->chunk_id == AMDGPU_CHUNK_ID_BO_HANDLES) {
            const auto* in = static_cast<const drm_amdgpu_bo_list_in*>(data);
            if (int r = bosOfList(file, in->bo_info_ptr, in->bo_number, in->bo_info_size, &listed);
                r < 0)
                return r;
        } else if (chunk->chunk_id == AMDGPU_CHUNK_ID_SYNCOBJ_OUT) {
            // amdgpu_cs_p1 / amdgpu_cs_p2_syncobj_out: each handle found in the file (EINVAL
            // when it is not); the job's fence replaces each syncobj's fence.
            const auto* sems = static_cast<const drm_amdgpu_cs_chunk_sem*>(data);
            for (uint32_t k = 0; k < chunk->length_dw * 4u / sizeof(*sems); ++k) {
                auto found = file.syncobjs.find(sems[k].handle);
                if (found == file.syncobjs.end())
                    return -EINVAL;
                signals.push_back(found->second);
            }
        } else {
            return -EINVAL; // this fake runs IBs, BO lists and syncobj signals only
        }
    }
    if (!ib || ib->ip_type != AMDGPU_HW_IP_DMA || ib->ring != 0 || ib->ib_bytes == 0 ||
        ib->ib_bytes % 4)
        return -EINVAL;
    auto fault = [&](const std::string& what) {
        gpuFaults.push_back("f" + std::to_string(file.clientId) + ": " + what);
    };
    const Mapping* ibMap = residentMapping(file, ib->va_start, ib->ib_bytes, listed);
    std::vector<fakesdma::LinearCopy> copies;
    if (!ibMap) {
        fault("IB not in a resident mapped BO");
    } else {
        std::vector<uint32_t> dw(ib->ib_bytes / 4);
        memcpy(dw.data(), ibMap->bo->bytes() + ibMap->offset + (ib->va_start - ibMap->addr),
               ib->ib_bytes);
        if (std::string bad = fakesdma::parseIb(dw, &copies); !bad.empty())
            fault(bad);
    }
    for (const fakesdma::LinearCopy& c : copies) {
        const Mapping* src = residentMapping(file, c.src, c.bytes, listed);
        const Mapping* dst = residentMapping(file, c.dst, c.bytes, listed);
        if (!src || !dst || !(dst->flags & AMDGPU_VM_PAGE_WRITEABLE)) {
            fault("COPY_LINEAR of " + std::to_string(c.bytes) +
                  " bytes outside the resident mapped BOs, or into a read-only mapping");
            continue;
        }
        memmove(dst->bo->bytes() + dst->offset + (c.dst - dst->addr),
                src->bo->bytes() + src->offset + (c.src - src->addr), c.bytes);
        ++csCopyPackets;
        events.push_back("cs f" + std::to_string(file.clientId));
    }
    for (const std::shared_ptr<Syncobj>& s : signals) {
        s->base = Fence{csHung ? Bo::kNever : nowNs}; // the job completed (or never will)
        s->chain.clear();
    }
    *cs = {};
    cs->out.handle = ++ctx->second.lastSeq;
    return 0;
}

int FakeKernel::waitCs(File& file, void* arg) {
    auto* w = static_cast<drm_amdgpu_wait_cs*>(arg);
    auto ctx = file.contexts.find(w->in.ctx_id);
    if (ctx == file.contexts.end())
        return -EINVAL; // amdgpu_cs_wait_ioctl: amdgpu_ctx_get
    if (w->in.ip_type != AMDGPU_HW_IP_DMA || w->in.ring != 0)
        return -EINVAL;
    if (w->in.handle > ctx->second.lastSeq)
        return -EINVAL; // amdgpu_ctx_get_fence: a sequence number not submitted yet
    bool busy = csHung;
    if (busy && w->in.timeout > nowNs)
        advanceClock(w->in.timeout);
    *w = {};
    w->out.status = busy ? 1 : 0;
    return 0;
}

} // namespace fakedrm
