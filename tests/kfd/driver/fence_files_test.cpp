// Fence files of the driver's render nodes (render_node_fence_files.cpp): a syncobj's fd and a
// sync file are files of the driver with nodes of the machine's memory, one new file per export
// as the kernel's anon inodes are; the fds of SYNCOBJ_FD_TO_HANDLE, IMPORT_SYNC_FILE and
// SYNC_IOC_MERGE are their file ids here (the client turns its fds into them: drmUserIoctl), and
// the rules are drm_syncobj.c's and sync_file.c's, errors included.
#include "in_process_render_node.h"

#include <fcntl.h>
#include <linux/sync_file.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace {

using kfddriver::Message;
using kfddriver::RenderNodeService;
using namespace kfddrivertest;

class FenceFiles : public InProcessRenderNode {
protected:
    uint32_t createSyncobj(uint32_t flags = 0) {
        drm_syncobj_create create{};
        create.flags = flags;
        EXPECT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create));
        return create.handle;
    }
    /// SYNCOBJ_HANDLE_TO_FD of `handle` with `flags`: the fence file's id, or -errno.
    int64_t exportSyncobj(uint32_t handle, uint32_t flags) {
        drm_syncobj_handle h{};
        h.handle = handle;
        h.flags = flags;
        int r = ioctl(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h);
        return r < 0 ? r : h.fd;
    }
    bool isNode(int64_t id, const char* name) {
        struct stat st {};
        return ::stat(kfddriver::fenceFileNodePath(dir_.path(), id, name).c_str(), &st) == 0 &&
               S_ISBLK(st.st_mode);
    }
    /// `request` on file `file` as a client makes it with fds of its own (kfddriver::drmUserIoctl,
    /// the interposer's and the backend's): the result.
    int clientIoctl(int64_t file, unsigned long request, void* arg) {
        return kfddriver::drmUserIoctl(dir_.path(), file, request, arg,
                                       [&](const Message& m, Message* answer) {
                                           Message mine = m;
                                           mine.pid = getpid();
                                           *answer = server_->handle(mine);
                                           return true;
                                       });
    }
    /// SYNC_IOC_FILE_INFO of fence file `id` with room for `room` fences in `fences`.
    int fileInfo(int64_t id, sync_file_info* info, sync_fence_info* fences, uint32_t room) {
        *info = {};
        info->num_fences = room;
        info->sync_fence_info = reinterpret_cast<uintptr_t>(fences);
        return ioctl(SYNC_IOC_FILE_INFO, info, id);
    }
};

TEST_F(FenceFiles, ASyncobjsFdAndASyncFileAreNewFilesOfTheDriverWithNodes) {
    uint32_t signaled = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int64_t syncobjFile = exportSyncobj(signaled, 0);
    ASSERT_GE(syncobjFile, RenderNodeService::kFenceFileBase);
    EXPECT_TRUE(isNode(syncobjFile, kfddriver::kSyncobjNodeName));
    int64_t syncFile = exportSyncobj(signaled, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE);
    ASSERT_GE(syncFile, RenderNodeService::kFenceFileBase);
    EXPECT_NE(syncFile, syncobjFile);
    EXPECT_TRUE(isNode(syncFile, kfddriver::kSyncFileNodeName));
    EXPECT_NE(syncFile, exportSyncobj(signaled, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE))
        << "each export is a file of its own, as anon_inode_getfile makes one";

    // The syncobj's fd imports as the same syncobj at the lowest free handle.
    drm_syncobj_handle in{};
    in.fd = static_cast<int32_t>(syncobjFile);
    ASSERT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    EXPECT_EQ(2u, in.handle);
    EXPECT_EQ(syncobjFile, in.fd) << "the caller's fd field did not come back";
    in.fd = static_cast<int32_t>(syncFile); // a sync file is no syncobj's file
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    in.fd = -1; // an fd not of the driver
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));

    // Neither maps; fstat is the node's, which criu sees of the fd.
    EXPECT_EQ(-ENODEV, mapping(syncFile, 0, 4096).pid);
    EXPECT_EQ(-ENODEV, mapping(syncobjFile, 0, 4096).pid);
    struct stat answered {};
    ASSERT_EQ(0, fstat(syncFile, &answered));
    struct stat node {};
    std::string path =
        kfddriver::fenceFileNodePath(dir_.path(), syncFile, kfddriver::kSyncFileNodeName);
    ASSERT_EQ(0, ::stat(path.c_str(), &node));
    EXPECT_EQ(node.st_ino, answered.st_ino);
}

// drm_syncobj_export_sync_file: an unknown handle ENOENT, a syncobj without a fence EINVAL
// (the plain HANDLE_TO_FD answers EINVAL for an unknown handle); flags other than
// EXPORT_SYNC_FILE and TIMELINE, or a pad, EINVAL.
TEST_F(FenceFiles, ExportingASyncFileAnswersTheKernelsErrors) {
    constexpr uint32_t kExport = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
    EXPECT_EQ(-ENOENT, exportSyncobj(7, kExport));
    EXPECT_EQ(-EINVAL, exportSyncobj(7, 0));
    uint32_t empty = createSyncobj();
    EXPECT_EQ(-EINVAL, exportSyncobj(empty, kExport)) << "a syncobj without a fence";
    EXPECT_EQ(-EINVAL, exportSyncobj(empty, 1u << 5));
    drm_syncobj_handle padded{};
    padded.handle = empty;
    padded.pad = 1;
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &padded));
    EXPECT_GE(exportSyncobj(empty, 0), RenderNodeService::kFenceFileBase)
        << "a syncobj's own fd needs no fence";
}

// drm_syncobj_import_sync_file_fence: an fd that is no sync file EINVAL before the handle is
// looked up, an unknown handle ENOENT; the fence replaces the syncobj's.
TEST_F(FenceFiles, ImportingASyncFileGivesTheSyncobjItsFence) {
    uint32_t signaled = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int64_t syncFile = exportSyncobj(signaled, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE);
    int64_t syncobjFile = exportSyncobj(signaled, 0);
    uint32_t empty = createSyncobj();
    drm_syncobj_handle in{};
    in.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
    in.handle = 99;
    in.fd = static_cast<int32_t>(syncobjFile);
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in)) << "no sync file";
    in.fd = static_cast<int32_t>(syncFile);
    EXPECT_EQ(-ENOENT, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in)) << "no such syncobj";
    drm_syncobj_wait wait{};
    wait.handles = reinterpret_cast<uintptr_t>(&empty);
    wait.count_handles = 1;
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_SYNCOBJ_WAIT, &wait)) << "the empty syncobj has a fence";
    in.handle = empty;
    ASSERT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    EXPECT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_WAIT, &wait)) << "the sync file's fence is not there";
}

// sync_file.c's ioctls on a sync file: MERGE (its fd2 a sync file, else ENOENT; flags EINVAL)
// makes a new one; FILE_INFO says how many fences and their status, writing each where the
// caller points (flags: EINVAL); anything else, and any ioctl on a syncobj's file, ENOTTY.
TEST_F(FenceFiles, ASyncFilesOwnIoctlsAreSyncFilesOnes) {
    uint32_t signaled = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int64_t a = exportSyncobj(signaled, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE);
    int64_t b = exportSyncobj(signaled, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE);
    int64_t syncobjFile = exportSyncobj(signaled, 0);
    sync_merge_data merge{};
    strcpy(merge.name, "merged");
    merge.fd2 = static_cast<int32_t>(syncobjFile);
    EXPECT_EQ(-ENOENT, ioctl(SYNC_IOC_MERGE, &merge, a)) << "fd2 is no sync file";
    merge.fd2 = static_cast<int32_t>(b);
    merge.flags = 1;
    EXPECT_EQ(-EINVAL, ioctl(SYNC_IOC_MERGE, &merge, a));
    merge.flags = 0;
    ASSERT_EQ(0, ioctl(SYNC_IOC_MERGE, &merge, a));
    EXPECT_EQ(b, merge.fd2);
    int64_t merged = merge.fence;
    EXPECT_GE(merged, RenderNodeService::kFenceFileBase);
    EXPECT_TRUE(isNode(merged, kfddriver::kSyncFileNodeName));

    sync_file_info info{};
    sync_fence_info fences[2] = {};
    ASSERT_EQ(0, fileInfo(merged, &info, nullptr, 0));
    EXPECT_EQ(1, info.status);
    EXPECT_EQ(1u, info.num_fences) << "two signaled fences merge into one signaled stub";
    EXPECT_STREQ("merged", info.name);
    ASSERT_EQ(0, fileInfo(a, &info, fences, 2));
    EXPECT_EQ(1, info.status);
    EXPECT_EQ(1u, info.num_fences);
    EXPECT_EQ(1, fences[0].status) << "the fence's information was not written to the caller";
    EXPECT_STRNE("", fences[0].driver_name);
    info = {};
    info.flags = 1;
    EXPECT_EQ(-EINVAL, ioctl(SYNC_IOC_FILE_INFO, &info, a));
    EXPECT_EQ(-ENOTTY, ioctl(SYNC_IOC_FILE_INFO, &info, syncobjFile));
    drm_syncobj_create create{};
    EXPECT_EQ(-ENOTTY, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create, a)) << "a DRM ioctl on a sync file";
}

// The client's side (drmUserIoctl): an export is an fd of the new file's node in the caller's
// table, read-only and close-on-exec as the kernel installs it, that polls readable (the
// driver's fences have signaled) and dups; the fds a caller gives go as file ids and come back
// as they were; an fd not of the driver is no sync file (EINVAL, MERGE's ENOENT).
TEST_F(FenceFiles, AClientHoldsRealFdsOfFenceFiles) {
    uint32_t signaled = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    drm_syncobj_handle h{};
    h.handle = signaled;
    h.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
    ASSERT_EQ(0, clientIoctl(file_, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h));
    int syncFile = h.fd;
    ASSERT_GE(syncFile, 0);
    EXPECT_LT(syncFile, RenderNodeService::kFenceFileBase) << "a file id, not an fd";
    EXPECT_EQ(O_RDONLY, fcntl(syncFile, F_GETFL) & O_ACCMODE);
    EXPECT_EQ(FD_CLOEXEC, fcntl(syncFile, F_GETFD));
    int64_t id = kfddriver::fileOfFd(dir_.path(), 0, syncFile);
    EXPECT_EQ(kfddriver::fenceFileNodePath(dir_.path(), id, kfddriver::kSyncFileNodeName),
              kfddriver::linkOfFd(0, syncFile));
    pollfd ready{syncFile, POLLIN, 0};
    EXPECT_EQ(1, poll(&ready, 1, 0));
    int copy = dup(syncFile);

    uint32_t empty = createSyncobj();
    drm_syncobj_handle in{};
    in.handle = empty;
    in.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
    in.fd = copy;
    EXPECT_EQ(0, clientIoctl(file_, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    EXPECT_EQ(copy, in.fd) << "the caller's fd field did not come back";
    int pipeFds[2];
    ASSERT_EQ(0, pipe(pipeFds));
    in.fd = pipeFds[0];
    EXPECT_EQ(-EINVAL, clientIoctl(file_, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    EXPECT_EQ(pipeFds[0], in.fd);

    sync_merge_data merge{};
    merge.fd2 = copy;
    ASSERT_EQ(0, clientIoctl(id, SYNC_IOC_MERGE, &merge));
    EXPECT_EQ(copy, merge.fd2);
    int merged = merge.fence;
    EXPECT_EQ(kfddriver::fenceFileNodePath(dir_.path(), kfddriver::fileOfFd(dir_.path(), 0, merged),
                                           kfddriver::kSyncFileNodeName),
              kfddriver::linkOfFd(0, merged));
    merge.fd2 = pipeFds[1];
    EXPECT_EQ(-ENOENT, clientIoctl(id, SYNC_IOC_MERGE, &merge));
    for (int fd : {syncFile, copy, merged, pipeFds[0], pipeFds[1]})
        close(fd);
}

} // namespace
