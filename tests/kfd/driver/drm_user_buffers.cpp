// The user buffers of the render-node ioctls the driver serves: for each request, what its struct
// points at, how long each buffer is, and whether the kernel writes it (amdgpu_drm.h, drm.h).
#include "drm_user_buffers.h"

#include "fake_render_node.h"
#include "uapi.h"

#include <linux/sync_file.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace kfddriver {

namespace {

/// The requests served, each by the name a ROOT/faults line gives it ("drm:NAME": the name in
/// drm.h or amdgpu_drm.h without DRM_IOCTL_ or DRM_IOCTL_AMDGPU_).
struct ServedRequest {
    unsigned long request;
    const char* name;
};
constexpr ServedRequest kServed[] = {{DRM_IOCTL_VERSION, "VERSION"},
                                     {DRM_IOCTL_GET_CAP, "GET_CAP"},
                                     {DRM_IOCTL_AMDGPU_INFO, "INFO"},
                                     {DRM_IOCTL_AMDGPU_BO_LIST, "BO_LIST"},
                                     {DRM_IOCTL_AMDGPU_CS, "CS"},
                                     {DRM_IOCTL_SYNCOBJ_WAIT, "SYNCOBJ_WAIT"},
                                     {DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, "SYNCOBJ_TIMELINE_WAIT"},
                                     {DRM_IOCTL_SYNCOBJ_RESET, "SYNCOBJ_RESET"},
                                     {DRM_IOCTL_SYNCOBJ_SIGNAL, "SYNCOBJ_SIGNAL"},
                                     {DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, "SYNCOBJ_TIMELINE_SIGNAL"},
                                     {DRM_IOCTL_SYNCOBJ_QUERY, "SYNCOBJ_QUERY"},
                                     {drm::kIoctlGemListHandles, "GEM_LIST_HANDLES"},
                                     {drm::kIoctlGemOp, "GEM_OP"},
                                     {DRM_IOCTL_GEM_CLOSE, "GEM_CLOSE"},
                                     {DRM_IOCTL_AMDGPU_GEM_CREATE, "GEM_CREATE"},
                                     {DRM_IOCTL_AMDGPU_GEM_MMAP, "GEM_MMAP"},
                                     {DRM_IOCTL_AMDGPU_GEM_VA, "GEM_VA"},
                                     {DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, "GEM_WAIT_IDLE"},
                                     {DRM_IOCTL_AMDGPU_CTX, "CTX"},
                                     {DRM_IOCTL_AMDGPU_WAIT_CS, "WAIT_CS"},
                                     {DRM_IOCTL_SYNCOBJ_CREATE, "SYNCOBJ_CREATE"},
                                     {DRM_IOCTL_SYNCOBJ_DESTROY, "SYNCOBJ_DESTROY"},
                                     {DRM_IOCTL_SYNCOBJ_TRANSFER, "SYNCOBJ_TRANSFER"},
                                     {drm::kIoctlGemChangeHandle, "GEM_CHANGE_HANDLE"},
                                     {DRM_IOCTL_PRIME_HANDLE_TO_FD, "PRIME_HANDLE_TO_FD"},
                                     {DRM_IOCTL_PRIME_FD_TO_HANDLE, "PRIME_FD_TO_HANDLE"},
                                     {DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, "SYNCOBJ_HANDLE_TO_FD"},
                                     {DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, "SYNCOBJ_FD_TO_HANDLE"}};

} // namespace

unsigned long servedDrmRequest(unsigned long request) {
    if (_IOC_TYPE(request) != DRM_IOCTL_BASE)
        return 0;
    for (const ServedRequest& served : kServed)
        if (_IOC_NR(served.request) == _IOC_NR(request))
            return served.request;
    return 0;
}

unsigned long servedDrmRequestNamed(const std::string& name) {
    for (const ServedRequest& served : kServed)
        if (name == served.name)
            return served.request;
    return 0;
}

int DrmUserBuffers::take(void* field, uint64_t bytes, bool written) {
    uint64_t user = 0;
    memcpy(&user, field, sizeof(user));
    if (user == 0 || bytes == 0)
        return 0;
    if (bytes > kMaxBuffer)
        return -ENOMEM;
    Buffer& b = buffers_.emplace_back();
    b.user = user;
    b.field = field;
    b.bytes.resize(bytes);
    b.written = written;
    // Read first even when the kernel only writes: what it leaves unwritten goes back as it was.
    iovec local{b.bytes.data(), bytes};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(b.user)), bytes};
    ssize_t n = process_vm_readv(caller_, &local, 1, &remote, 1, 0);
    if (n != static_cast<ssize_t>(bytes))
        return -EFAULT;
    uint64_t copy = reinterpret_cast<uintptr_t>(b.bytes.data());
    memcpy(field, &copy, sizeof(copy));
    return 0;
}

int DrmUserBuffers::takeCsChunks(void* arg) {
    auto* cs = static_cast<drm_amdgpu_cs*>(arg);
    uint64_t count = cs->in.num_chunks;
    if (int r = take(&cs->in.chunks, count * sizeof(uint64_t), false); r < 0 || !count)
        return r;
    auto* chunks = reinterpret_cast<uint64_t*>(static_cast<uintptr_t>(cs->in.chunks));
    for (uint64_t i = 0; i < count; ++i) {
        if (!chunks[i])
            return -EFAULT;
        if (int r = take(&chunks[i], sizeof(drm_amdgpu_cs_chunk), false); r < 0)
            return r;
        auto* chunk = reinterpret_cast<drm_amdgpu_cs_chunk*>(static_cast<uintptr_t>(chunks[i]));
        uint64_t bytes = uint64_t{chunk->length_dw} * 4;
        if (!chunk->chunk_data || !bytes)
            return -EINVAL; // amdgpu_cs_pass1: every chunk has data
        if (int r = take(&chunk->chunk_data, bytes, false); r < 0)
            return r;
        if (chunk->chunk_id != AMDGPU_CHUNK_ID_BO_HANDLES)
            continue; // the other chunks hold their data inline
        if (bytes < sizeof(drm_amdgpu_bo_list_in))
            return -EINVAL;
        auto* list =
            reinterpret_cast<drm_amdgpu_bo_list_in*>(static_cast<uintptr_t>(chunk->chunk_data));
        if (int r = take(&list->bo_info_ptr, uint64_t{list->bo_number} * list->bo_info_size, false);
            r < 0)
            return r;
    }
    return 0;
}

int DrmUserBuffers::copyIn(unsigned long request, void* arg) {
    switch (request) {
    case DRM_IOCTL_VERSION: {
        auto* v = static_cast<drm_version*>(arg);
        int r = take(&v->name, v->name_len, true);
        if (r == 0)
            r = take(&v->date, v->date_len, true);
        return r ? r : take(&v->desc, v->desc_len, true);
    }
    case DRM_IOCTL_AMDGPU_INFO: {
        auto* q = static_cast<drm_amdgpu_info*>(arg);
        return take(&q->return_pointer, q->return_size, true);
    }
    case DRM_IOCTL_AMDGPU_BO_LIST: {
        auto* l = static_cast<drm_amdgpu_bo_list*>(arg);
        return take(&l->in.bo_info_ptr, uint64_t{l->in.bo_number} * l->in.bo_info_size, false);
    }
    case DRM_IOCTL_AMDGPU_CS:
        return takeCsChunks(arg);
    case DRM_IOCTL_SYNCOBJ_WAIT: {
        auto* w = static_cast<drm_syncobj_wait*>(arg);
        return take(&w->handles, uint64_t{w->count_handles} * 4, false);
    }
    case DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT: {
        auto* w = static_cast<drm_syncobj_timeline_wait*>(arg);
        int r = take(&w->handles, uint64_t{w->count_handles} * 4, false);
        return r ? r : take(&w->points, uint64_t{w->count_handles} * 8, false);
    }
    case DRM_IOCTL_SYNCOBJ_RESET:
    case DRM_IOCTL_SYNCOBJ_SIGNAL: {
        auto* a = static_cast<drm_syncobj_array*>(arg);
        return take(&a->handles, uint64_t{a->count_handles} * 4, false);
    }
    case DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL:
    case DRM_IOCTL_SYNCOBJ_QUERY: {
        auto* a = static_cast<drm_syncobj_timeline_array*>(arg);
        int r = take(&a->handles, uint64_t{a->count_handles} * 4, false);
        return r ? r
                 : take(&a->points, uint64_t{a->count_handles} * 8,
                        request == DRM_IOCTL_SYNCOBJ_QUERY);
    }
    case drm::kIoctlGemListHandles: {
        auto* l = static_cast<drm::GemListHandles*>(arg);
        return take(&l->entries, uint64_t{l->numEntries} * sizeof(drm::GemListHandlesEntry), true);
    }
    case drm::kIoctlGemOp: {
        auto* o = static_cast<drm::GemOp*>(arg);
        return take(&o->value, uint64_t{o->numEntries} * sizeof(drm::GemVmEntry), true);
    }
    // No user pointers: the struct is all there is.
    case DRM_IOCTL_GEM_CLOSE:
    case DRM_IOCTL_AMDGPU_GEM_CREATE:
    case DRM_IOCTL_AMDGPU_GEM_MMAP:
    case DRM_IOCTL_AMDGPU_GEM_VA:
    case DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE:
    case DRM_IOCTL_AMDGPU_CTX:
    case DRM_IOCTL_AMDGPU_WAIT_CS:
    case DRM_IOCTL_SYNCOBJ_CREATE:
    case DRM_IOCTL_SYNCOBJ_DESTROY:
    case DRM_IOCTL_SYNCOBJ_TRANSFER:
    case drm::kIoctlGemChangeHandle:
    case DRM_IOCTL_PRIME_HANDLE_TO_FD: // the fd is a file id of the driver (render_node_prime.cpp)
    case DRM_IOCTL_PRIME_FD_TO_HANDLE:
    case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD: // its fds are fence file ids (render_node_fence_files.cpp)
    case DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE:
    case SYNC_IOC_MERGE:
    case fakedrm::kSyncIocSetDeadline:
        return 0;
    case SYNC_IOC_FILE_INFO: {
        // sync_file_ioctl_fence_info writes num_fences entries where sync_fence_info points.
        auto* info = static_cast<sync_file_info*>(arg);
        return take(&info->sync_fence_info, uint64_t{info->num_fences} * sizeof(sync_fence_info),
                    true);
    }
    default:
        return -ENOTTY; // USERPTR, ...: not served (its memory is the caller's)
    }
}

void DrmUserBuffers::restorePointers() const {
    for (const Buffer& b : buffers_)
        memcpy(b.field, &b.user, sizeof(b.user));
}

int DrmUserBuffers::copyOut() const {
    for (const Buffer& b : buffers_) {
        if (!b.written)
            continue;
        iovec local{const_cast<char*>(b.bytes.data()), b.bytes.size()};
        iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(b.user)), b.bytes.size()};
        if (process_vm_writev(caller_, &local, 1, &remote, 1, 0) !=
            static_cast<ssize_t>(b.bytes.size()))
            return -EFAULT;
    }
    return 0;
}

} // namespace kfddriver
