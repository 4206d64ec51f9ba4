// The fake render node's GPU contexts (amdgpu_ctx.c) and syncobjs (drm_syncobj.c), with the
// kernel's numbering (lowest free from 1), errors and fence semantics.
#include "fake_render_node.h"

#include <algorithm>
#include <cerrno>
#include <vector>

namespace fakedrm {

namespace {

/// The lowest number from `from` no key of `map` holds (idr_alloc's answer).
template <class Map> uint32_t lowestFree(const Map& map, uint32_t from = 1) {
    if (from == 1 && !map.empty() && map.rbegin()->first == map.size())
        return static_cast<uint32_t>(map.size()) + 1; // 1..size all held: no walk
    uint32_t n = from;
    for (auto it = map.lower_bound(from); it != map.end() && it->first == n; ++it)
        ++n;
    return n;
}

/// amdgpu_ctx_priority_is_valid: the five levels; anything else (UNSET, garbage) is taken as
/// NORMAL by amdgpu_ctx_ioctl.
bool validPriority(int32_t p) {
    return p == AMDGPU_CTX_PRIORITY_VERY_LOW || p == AMDGPU_CTX_PRIORITY_LOW ||
           p == AMDGPU_CTX_PRIORITY_NORMAL || p == AMDGPU_CTX_PRIORITY_HIGH ||
           p == AMDGPU_CTX_PRIORITY_VERY_HIGH;
}

/// DRM_SYNCOBJ_{HANDLE_TO_FD,FD_TO_HANDLE}_FLAGS_TIMELINE (Linux 6.6; bookworm lacks them).
constexpr uint32_t kSyncobjFdFlagTimeline = 1u << 1;

/// The later of two fences: what waiting for both takes.
Fence later(Fence a, Fence b) {
    return Fence{std::max(a.signalsAtNs, b.signalsAtNs)};
}

} // namespace

bool FakeKernel::signaled(const Fence& fence) const {
    return fence.signalsAtNs != Bo::kNever && fence.signalsAtNs <= nowNs;
}

// amdgpu_ctx_ioctl: ALLOC_CTX (idr_alloc_u32 from 1), FREE_CTX, QUERY_STATE(2),
// GET/SET_STABLE_PSTATE; an id the file does not hold is EINVAL, flags where none are defined
// EINVAL. Priorities above NORMAL need CAP_SYS_NICE or DRM master, which criu (root) has.
int FakeKernel::ctxIoctl(File& file, void* arg) {
    auto* a = static_cast<drm_amdgpu_ctx*>(arg);
    uint32_t op = a->in.op, flags = a->in.flags, id = a->in.ctx_id;
    int32_t priority = validPriority(a->in.priority) ? a->in.priority : AMDGPU_CTX_PRIORITY_NORMAL;
    if (op == AMDGPU_CTX_OP_SET_STABLE_PSTATE) {
        if ((flags & ~AMDGPU_CTX_STABLE_PSTATE_FLAGS_MASK) || flags > AMDGPU_CTX_STABLE_PSTATE_PEAK)
            return -EINVAL;
        return file.contexts.count(id) ? 0 : -EINVAL;
    }
    if (flags)
        return -EINVAL;
    if (op == AMDGPU_CTX_OP_ALLOC_CTX) {
        uint32_t fresh = lowestFree(file.contexts);
        file.contexts[fresh] = Ctx{priority, 0};
        a->out.alloc.ctx_id = fresh;
        return 0;
    }
    auto it = file.contexts.find(id);
    switch (op) {
    case AMDGPU_CTX_OP_FREE_CTX:
        if (it == file.contexts.end())
            return -EINVAL;
        file.contexts.erase(it);
        return 0;
    case AMDGPU_CTX_OP_QUERY_STATE:
    case AMDGPU_CTX_OP_QUERY_STATE2:
        if (it == file.contexts.end())
            return -EINVAL;
        a->out.state.flags = op == AMDGPU_CTX_OP_QUERY_STATE2 ? it->second.query2Flags : 0;
        a->out.state.hangs = 0;
        if (op == AMDGPU_CTX_OP_QUERY_STATE)
            a->out.state.reset_status = (it->second.query2Flags & AMDGPU_CTX_QUERY2_FLAGS_RESET)
                                            ? AMDGPU_CTX_UNKNOWN_RESET
                                            : AMDGPU_CTX_NO_RESET;
        return 0;
    case AMDGPU_CTX_OP_GET_STABLE_PSTATE:
        if (it == file.contexts.end())
            return -EINVAL;
        a->out.pstate.flags = AMDGPU_CTX_STABLE_PSTATE_NONE; // the device's level, not the ctx's
        return 0;
    default:
        return -EINVAL;
    }
}

int FakeKernel::fenceAt(const Syncobj& s, uint64_t point, Fence* out) const {
    // dma_fence_chain_find_seqno: point 0 is the whole fence; a point of a plain fence, or one
    // above the last submitted, is not there (EINVAL); else the oldest link at or above it,
    // which signals when it and every link and fence under it have.
    if (s.empty())
        return -EINVAL;
    size_t links = s.chain.size();
    if (point != 0) {
        if (s.chain.empty() || s.chain.back().seqno < point)
            return -EINVAL;
        links = 0;
        while (s.chain[links].seqno < point)
            ++links;
        ++links;
    }
    Fence f = s.base.value_or(Fence{});
    for (size_t i = 0; i < links; ++i)
        f = later(f, s.chain[i].fence);
    *out = f;
    return 0;
}

void FakeKernel::submitSyncobjWork(int fd, uint32_t handle, uint64_t point, uint64_t durationNs) {
    Syncobj& s = *fileOf(fd)->syncobjs.at(handle);
    Fence f{durationNs == Bo::kNever ? Bo::kNever : nowNs + durationNs};
    if (point == 0) {
        s.base = f; // drm_syncobj_replace_fence
        s.chain.clear();
    } else {
        s.chain.push_back(Syncobj::Point{point, f}); // drm_syncobj_add_point
    }
}

// drm_syncobj_handle_to_fd_ioctl (6.6+): flags EXPORT_SYNC_FILE and TIMELINE (which names the
// point to export). The struct served is the 16-byte one of bookworm's headers and libdrm's,
// without `point`, which the kernel then zero-fills: the point is 0, the syncobj's whole fence.
int FakeKernel::syncobjHandleToFd(File& file, void* arg) {
    auto* h = static_cast<drm_syncobj_handle*>(arg);
    // libdrm's 16-byte form before `point` (the kernel zero-fills it): the TIMELINE flag
    // (1 << 1) then names point 0, the syncobj itself.
    if (h->pad ||
        (h->flags & ~(kSyncobjFdFlagTimeline | DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE)))
        return -EINVAL;
    if (h->flags & DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE) {
        int fd = exportSyncFile(file, h->handle, 0);
        if (fd < 0)
            return fd;
        h->fd = fd;
        return 0;
    }
    auto it = file.syncobjs.find(h->handle);
    if (it == file.syncobjs.end())
        return -EINVAL; // drm_syncobj_handle_to_fd: EINVAL for an unknown handle
    h->fd = newFd(FdObj{nullptr, nullptr, false, it->second});
    return 0;
}

// drm_syncobj_fd_to_handle_ioctl (6.6+): flags IMPORT_SYNC_FILE and TIMELINE (the point the
// sync file's fence is added at: 0 in the 16-byte struct, so the fence replaces the syncobj's).
int FakeKernel::syncobjFdToHandle(File& file, void* arg) {
    auto* h = static_cast<drm_syncobj_handle*>(arg);
    if (h->pad ||
        (h->flags & ~(kSyncobjFdFlagTimeline | DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE)))
        return -EINVAL;
    if (h->flags & DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE)
        return importSyncFile(file, h->fd, h->handle, 0);
    auto it = fds_.find(h->fd);
    if (it == fds_.end() || !it->second.syncobj)
        return -EINVAL; // not a syncobj file
    uint32_t handle = lowestFree(file.syncobjs);
    file.syncobjs[handle] = it->second.syncobj;
    h->handle = handle;
    return 0;
}

int FakeKernel::syncobjWait(File& file, unsigned long request, void* arg) {
    bool timeline = request == DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT;
    uint64_t handlesPtr = 0, pointsPtr = 0;
    int64_t deadline = 0;
    uint32_t count = 0, flags = 0;
    uint32_t* firstSignaled = nullptr;
    uint32_t possible = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
    if (timeline) {
        auto* w = static_cast<drm_syncobj_timeline_wait*>(arg);
        handlesPtr = w->handles, pointsPtr = w->points, deadline = w->timeout_nsec;
        count = w->count_handles, flags = w->flags, firstSignaled = &w->first_signaled;
        possible |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE;
    } else {
        auto* w = static_cast<drm_syncobj_wait*>(arg);
        handlesPtr = w->handles, deadline = w->timeout_nsec;
        count = w->count_handles, flags = w->flags, firstSignaled = &w->first_signaled;
    }
    if (flags & ~possible)
        return -EINVAL;
    if (count == 0)
        return 0;
    const auto* handles = reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(handlesPtr));
    const auto* points = reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(pointsPtr));
    bool all = flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL;
    bool forSubmit =
        flags & (DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE);
    // When each signals (kNever: not submitted, and nothing here submits while we wait).
    std::vector<uint64_t> at(count);
    for (uint32_t i = 0; i < count; ++i) {
        auto it = file.syncobjs.find(handles[i]);
        if (it == file.syncobjs.end())
            return -ENOENT;
        Fence f;
        if (fenceAt(*it->second, points ? points[i] : 0, &f) != 0) {
            if (!forSubmit)
                return -EINVAL;
            f.signalsAtNs = Bo::kNever;
        } else if (flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE) {
            f.signalsAtNs = 0; // submitted is enough
        }
        at[i] = signaled(f) ? 0 : f.signalsAtNs;
    }
    uint32_t first = static_cast<uint32_t>(std::min_element(at.begin(), at.end()) - at.begin());
    uint64_t needed = all ? *std::max_element(at.begin(), at.end()) : at[first];
    if (needed > nowNs) {
        if (needed == Bo::kNever || deadline <= 0 || static_cast<uint64_t>(deadline) < needed) {
            if (deadline > 0)
                advanceClock(static_cast<uint64_t>(deadline));
            return -ETIME;
        }
        advanceClock(needed);
    }
    if (!all)
        *firstSignaled = first;
    return 0;
}

// RESET, SIGNAL (drm_syncobj_array), QUERY and TIMELINE_SIGNAL (drm_syncobj_timeline_array).
int FakeKernel::syncobjArrayOp(File& file, unsigned long request, void* arg) {
    bool timelineArray =
        request == DRM_IOCTL_SYNCOBJ_QUERY || request == DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL;
    uint64_t handlesPtr = 0, pointsPtr = 0;
    uint32_t count = 0;
    if (timelineArray) {
        auto* a = static_cast<drm_syncobj_timeline_array*>(arg);
        uint32_t allowed =
            request == DRM_IOCTL_SYNCOBJ_QUERY ? DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0;
        if (a->flags & ~allowed)
            return -EINVAL;
        handlesPtr = a->handles, pointsPtr = a->points, count = a->count_handles;
    } else {
        auto* a = static_cast<drm_syncobj_array*>(arg);
        if (a->pad)
            return -EINVAL;
        handlesPtr = a->handles, count = a->count_handles;
    }
    if (count == 0)
        return -EINVAL;
    const auto* handles = reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(handlesPtr));
    auto* points = reinterpret_cast<uint64_t*>(static_cast<uintptr_t>(pointsPtr));
    std::vector<Syncobj*> objs;
    for (uint32_t i = 0; i < count; ++i) {
        auto it = file.syncobjs.find(handles[i]);
        if (it == file.syncobjs.end())
            return -ENOENT; // drm_syncobj_array_find
        objs.push_back(it->second.get());
    }
    bool lastSubmitted = request == DRM_IOCTL_SYNCOBJ_QUERY &&
                         (static_cast<drm_syncobj_timeline_array*>(arg)->flags &
                          DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED);
    for (uint32_t i = 0; i < count; ++i) {
        Syncobj& s = *objs[i];
        if (request == DRM_IOCTL_SYNCOBJ_RESET) {
            s = Syncobj{};
        } else if (request == DRM_IOCTL_SYNCOBJ_SIGNAL) {
            s = Syncobj{};
            s.base = Fence{}; // a signaled stub fence
        } else if (request == DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL) {
            s.chain.push_back(Syncobj::Point{points ? points[i] : 0, Fence{}});
        } else {
            // drm_syncobj_query_ioctl: 0 without a chain; the last point submitted; else the
            // newest point every link up to which has signaled.
            uint64_t value = 0;
            Fence f = s.base.value_or(Fence{});
            for (const Syncobj::Point& p : s.chain) {
                f = later(f, p.fence);
                if (lastSubmitted || signaled(f))
                    value = p.seqno;
                else
                    break;
            }
            if (lastSubmitted && !s.chain.empty())
                value = s.chain.back().seqno;
            points[i] = value;
        }
    }
    return 0;
}

int FakeKernel::syncobjTransfer(File& file, void* arg) {
    auto* t = static_cast<drm_syncobj_transfer*>(arg);
    if (t->pad)
        return -EINVAL;
    auto dst = file.syncobjs.find(t->dst_handle);
    if (dst == file.syncobjs.end())
        return -ENOENT;
    // drm_syncobj_find_fence of the source point.
    if (t->flags & ~DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT)
        return -EINVAL;
    auto src = file.syncobjs.find(t->src_handle);
    if (src == file.syncobjs.end())
        return -ENOENT;
    Fence f;
    if (fenceAt(*src->second, t->src_point, &f) != 0)
        return (t->flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT) ? -ETIME : -EINVAL;
    Syncobj& d = *dst->second;
    if (t->dst_point) {
        d.chain.push_back(Syncobj::Point{t->dst_point, f});
    } else {
        d = Syncobj{};
        d.base = f;
    }
    return 0;
}

int FakeKernel::syncobjIoctl(File& file, unsigned long request, void* arg) {
    switch (request) {
    case DRM_IOCTL_SYNCOBJ_CREATE: {
        auto* c = static_cast<drm_syncobj_create*>(arg);
        if (c->flags & ~DRM_SYNCOBJ_CREATE_SIGNALED)
            return -EINVAL;
        auto s = std::make_shared<Syncobj>();
        if (c->flags & DRM_SYNCOBJ_CREATE_SIGNALED)
            s->base = Fence{};
        c->handle = lowestFree(file.syncobjs, syncobjHandleBase);
        file.syncobjs[c->handle] = s;
        return 0;
    }
    case DRM_IOCTL_SYNCOBJ_DESTROY: {
        auto* d = static_cast<drm_syncobj_destroy*>(arg);
        if (d->pad)
            return -EINVAL;
        return file.syncobjs.erase(d->handle) ? 0 : -EINVAL;
    }
    case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD:
        return syncobjHandleToFd(file, arg);
    case DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE:
        return syncobjFdToHandle(file, arg);
    case DRM_IOCTL_SYNCOBJ_WAIT:
    case DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT:
        return syncobjWait(file, request, arg);
    case DRM_IOCTL_SYNCOBJ_TRANSFER:
        return syncobjTransfer(file, arg);
    default:
        return syncobjArrayOp(file, request, arg);
    }
}

} // namespace fakedrm
