// The fake render node's sync files (drivers/dma-buf/sync_file.c, 6.x/7.x): a syncobj's fence
// exported as one (SYNCOBJ_HANDLE_TO_FD with EXPORT_SYNC_FILE) and one's fences imported into a
// syncobj (SYNCOBJ_FD_TO_HANDLE with IMPORT_SYNC_FILE), as drm_syncobj.c does them; and the sync
// file's own ioctls: SYNC_IOC_MERGE, SYNC_IOC_FILE_INFO, SYNC_IOC_SET_DEADLINE. The fake's fences
// have no context or seqno: a merge keeps every fence not yet signaled (the kernel's
// dma_fence_unwrap_merge also folds fences of one context into the later one), and FILE_INFO
// names each fence's driver and timeline as the fake's.
#include "fake_render_node.h"

#include <linux/sync_file.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fakedrm {

namespace {

/// What FILE_INFO names every fence of the fake by (its driver_name and obj_name).
constexpr char kFenceDriver[] = "fakedrm";
constexpr char kFenceTimeline[] = "fence";

} // namespace

// drm_syncobj_export_sync_file: the fence of `point` of the syncobj (drm_syncobj_find_fence: an
// unknown handle ENOENT, no fence there EINVAL) in a new sync file.
int FakeKernel::exportSyncFile(File& file, uint32_t handle, uint64_t point) {
    auto it = file.syncobjs.find(handle);
    if (it == file.syncobjs.end())
        return -ENOENT;
    Fence fence;
    if (int r = fenceAt(*it->second, point, &fence); r < 0)
        return r;
    auto syncFile = std::make_shared<SyncFile>();
    syncFile->fences.push_back(fence);
    FdObj obj;
    obj.syncFile = std::move(syncFile);
    return newFd(std::move(obj));
}

// drm_syncobj_import_sync_file_fence: an fd that is not a sync file EINVAL (sync_file_get_fence),
// then an unknown handle ENOENT; the fence replaces the syncobj's, or is added at `point`.
int FakeKernel::importSyncFile(File& file, int fd, uint32_t handle, uint64_t point) {
    auto from = fds_.find(fd);
    if (from == fds_.end() || !from->second.syncFile)
        return -EINVAL;
    auto it = file.syncobjs.find(handle);
    if (it == file.syncobjs.end())
        return -ENOENT;
    // The sync file's fence (a dma_fence_array of several) signals when all of its own have.
    Fence fence;
    for (const Fence& f : from->second.syncFile->fences)
        fence.signalsAtNs = std::max(fence.signalsAtNs, f.signalsAtNs);
    Syncobj& s = *it->second;
    if (point) {
        s.chain.push_back(Syncobj::Point{point, fence}); // drm_syncobj_add_point
    } else {
        s = Syncobj{};
        s.base = fence; // drm_syncobj_replace_fence
    }
    return 0;
}

// sync_file_ioctl: any other request is ENOTTY (a DRM ioctl on a sync file too).
int FakeKernel::syncFileIoctl(const SyncFile& syncFile, unsigned long request, void* arg) {
    switch (request) {
    case SYNC_IOC_MERGE:
        return syncFileMerge(syncFile, arg);
    case SYNC_IOC_FILE_INFO:
        return syncFileInfo(syncFile, arg);
    case kSyncIocSetDeadline:
        // sync_file_ioctl_set_deadline: a hint to the fence's driver, which the fake has no use of.
        return static_cast<SyncSetDeadline*>(arg)->pad ? -EINVAL : 0;
    default:
        return -ENOTTY;
    }
}

// sync_file_ioctl_merge: flags or pad set EINVAL, fd2 not a sync file ENOENT; the new file
// holds the fences of both not yet signaled, or one signaled stub fence when none is
// (dma_fence_unwrap_merge), and the name asked (its last byte made a NUL).
int FakeKernel::syncFileMerge(const SyncFile& syncFile, void* arg) {
    auto* m = static_cast<sync_merge_data*>(arg);
    if (m->flags || m->pad)
        return -EINVAL;
    auto other = fds_.find(m->fd2);
    if (other == fds_.end() || !other->second.syncFile)
        return -ENOENT;
    auto merged = std::make_shared<SyncFile>();
    uint64_t lastSignaled = 0;
    const SyncFile* both[] = {&syncFile, other->second.syncFile.get()};
    for (const SyncFile* from : both)
        for (const Fence& f : from->fences) {
            if (signaled(f))
                lastSignaled = std::max(lastSignaled, f.signalsAtNs);
            else
                merged->fences.push_back(f);
        }
    if (merged->fences.empty())
        merged->fences.push_back(Fence{lastSignaled}); // dma_fence_allocate_private_stub
    m->name[sizeof(m->name) - 1] = '\0';
    merged->name = m->name;
    FdObj obj;
    obj.syncFile = std::move(merged);
    m->fence = newFd(std::move(obj));
    return 0;
}

// sync_file_ioctl_fence_info: flags or pad set EINVAL; num_fences 0 asks only how many there are
// and the file's status (1 signaled, 0 not yet); else fewer than there are EINVAL, and each
// fence's information is written where sync_fence_info points, the status the first not
// signaled one's (0) or 1.
int FakeKernel::syncFileInfo(const SyncFile& syncFile, void* arg) const {
    auto* info = static_cast<sync_file_info*>(arg);
    if (info->flags || info->pad)
        return -EINVAL;
    auto count = static_cast<uint32_t>(syncFile.fences.size());
    if (info->num_fences == 0) {
        bool all = std::all_of(syncFile.fences.begin(), syncFile.fences.end(),
                               [this](const Fence& f) { return signaled(f); });
        info->status = all ? 1 : 0;
    } else {
        if (info->num_fences < count)
            return -EINVAL;
        auto* out =
            reinterpret_cast<sync_fence_info*>(static_cast<uintptr_t>(info->sync_fence_info));
        info->status = 1;
        for (uint32_t i = 0; i < count; ++i) {
            const Fence& f = syncFile.fences[i];
            sync_fence_info fenceInfo{};
            strncpy(fenceInfo.obj_name, kFenceTimeline, sizeof(fenceInfo.obj_name) - 1);
            strncpy(fenceInfo.driver_name, kFenceDriver, sizeof(fenceInfo.driver_name) - 1);
            fenceInfo.status = signaled(f) ? 1 : 0;
            fenceInfo.timestamp_ns = signaled(f) ? f.signalsAtNs : 0;
            memcpy(&out[i], &fenceInfo, sizeof(fenceInfo));
            if (info->status > 0)
                info->status = fenceInfo.status;
        }
    }
    // sync_file_get_name: the name a merge gave, else the fence's driver and timeline.
    std::string name =
        syncFile.name.empty() ? std::string(kFenceDriver) + "-" + kFenceTimeline : syncFile.name;
    memset(info->name, 0, sizeof(info->name));
    memcpy(info->name, name.data(), std::min(name.size(), sizeof(info->name) - 1));
    info->num_fences = count;
    return 0;
}

} // namespace fakedrm
