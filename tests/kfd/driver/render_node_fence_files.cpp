// Fence files on the driver's render nodes (render_node_service.h): a syncobj's fd
// (SYNCOBJ_HANDLE_TO_FD) and a sync file (SYNCOBJ_HANDLE_TO_FD with EXPORT_SYNC_FILE, and
// SYNC_IOC_MERGE of two) are each a file of the driver, ROOT/files/ID/syncobj or
// ROOT/files/ID/sync_file, a block node of the machine's memory that the caller opens, so that it
// holds a real fd of its own that dup, fork, SCM_RIGHTS and criu carry, as a dma-buf's is. Each
// export makes a new file, as the kernel's anon_inode_getfile does. The rules are the fake render
// node's, which keeps drm_syncobj.c's and sync_file.c's (tests/drm/fake_sync_files.cpp): the
// driver only turns the caller's fds into the fake's and back.
//
// What a real fd of a block node cannot be: a sync file polls readable (POLLIN) once its fence
// has signaled, and a block device always polls readable. The driver's fences signal when the
// ioctl that makes them returns (its SDMA engine runs a submission within AMDGPU_CS), so a
// sync file of this driver is always signaled when a caller can poll it, unless the engine is
// made to hang (the fake's csHung), whose fence a poll would wrongly find signaled; FILE_INFO
// says the truth.
#include "drm_user_buffers.h"
#include "render_node_service.h"

#include <linux/sync_file.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace kfddriver {

int64_t RenderNodeService::addFenceFile(int fakeFd, const char* node) {
    int64_t id = nextFenceFile_;
    if (id > INT32_MAX) {
        kernel_.close(fakeFd);
        return -EMFILE;
    }
    if (int e = memory_->makeFileNode(root_, id, node); e < 0) {
        kernel_.close(fakeFd);
        return e;
    }
    ++nextFenceFile_;
    fenceFiles_[id] = FenceFile{fakeFd, node};
    return id;
}

int RenderNodeService::fakeFdOfFenceFile(int64_t id) const {
    auto it = fenceFiles_.find(id);
    return it == fenceFiles_.end() ? -1 : it->second.fakeFd;
}

int RenderNodeService::syncobjExport(int fd, void* arg) {
    auto* h = static_cast<drm_syncobj_handle*>(arg);
    if (int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, arg); r < 0)
        return r;
    bool syncFile = h->flags & DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
    int64_t id = addFenceFile(h->fd, syncFile ? kSyncFileNodeName : kSyncobjNodeName);
    if (id < 0)
        return static_cast<int>(id);
    h->fd = static_cast<int32_t>(id);
    return 0;
}

int RenderNodeService::syncobjImport(int fd, void* arg) {
    auto* h = static_cast<drm_syncobj_handle*>(arg);
    int32_t id = h->fd;
    h->fd = fakeFdOfFenceFile(id); // not a fence file: EINVAL, as fdget's or the fops' check
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, arg);
    h->fd = id;
    return r;
}

Message RenderNodeService::fenceFileIoctl(pid_t caller, const Message& request) {
    Message answer;
    unsigned long number = request.a;
    // sync_file_ioctl knows its requests by their whole number; a syncobj's file has no ioctl.
    bool known = number == SYNC_IOC_MERGE || number == SYNC_IOC_FILE_INFO ||
                 number == fakedrm::kSyncIocSetDeadline;
    if (!known || request.text.size() != _IOC_SIZE(number)) {
        answer.pid = -ENOTTY;
        return answer;
    }
    std::string arg = request.text;
    DrmUserBuffers user(caller);
    answer.pid = user.copyIn(number, arg.data());
    auto* merge = reinterpret_cast<sync_merge_data*>(arg.data());
    int32_t fd2 = number == SYNC_IOC_MERGE ? merge->fd2 : -1;
    if (number == SYNC_IOC_MERGE)
        merge->fd2 = fakeFdOfFenceFile(fd2); // not a sync file: ENOENT
    if (answer.pid == 0)
        answer.pid = kernel_.ioctl(fenceFiles_.at(request.file).fakeFd, number, arg.data());
    if (number == SYNC_IOC_MERGE) {
        merge->fd2 = fd2;
        if (answer.pid == 0) {
            int64_t id = addFenceFile(merge->fence, kSyncFileNodeName);
            answer.pid = id < 0 ? id : 0;
            merge->fence = id < 0 ? -1 : static_cast<int32_t>(id);
        }
    }
    if (answer.pid >= 0)
        if (int r = user.copyOut(); r < 0)
            answer.pid = r;
    user.restorePointers();
    if (_IOC_DIR(number) & _IOC_READ)
        answer.text = std::move(arg);
    return answer;
}

int RenderNodeService::fenceFileStat(int64_t id, struct stat* st) const {
    auto it = fenceFiles_.find(id);
    if (it == fenceFiles_.end())
        return -EBADF;
    if (::stat(fenceFileNodePath(root_, id, it->second.node).c_str(), st) != 0)
        return -errno;
    return 0;
}

} // namespace kfddriver
