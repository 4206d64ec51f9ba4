// The fake render node's sync files (fake_sync_files.cpp), by the rules of drm_syncobj.c and
// sync_file.c: a syncobj's fence exported as one and imported back, SYNC_IOC_MERGE keeping the
// fences not yet signaled, SYNC_IOC_FILE_INFO's counts and statuses, and every error.
#include "drm_fixture.h"

#include <linux/sync_file.h>

#include <cerrno>
#include <cstring>

namespace fakedrm {
namespace {

constexpr uint64_t kSecond = 1000000000ull;
constexpr uint32_t kExport = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
constexpr uint32_t kImport = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;

class FakeSyncFiles : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        fd = m.open(100, 5, 128).fd;
    }
    uint32_t createSyncobj(uint32_t flags = 0) {
        drm_syncobj_create c{};
        c.flags = flags;
        EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c));
        return c.handle;
    }
    /// SYNCOBJ_HANDLE_TO_FD: the new fd, or -errno.
    int exportSyncobj(uint32_t handle, uint32_t flags) {
        drm_syncobj_handle h{};
        h.handle = handle;
        h.flags = flags;
        int r = k.ioctl(fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h);
        return r < 0 ? r : h.fd;
    }
    int importSyncFile(int from, uint32_t handle) {
        drm_syncobj_handle h{};
        h.handle = handle;
        h.flags = kImport;
        h.fd = from;
        return k.ioctl(fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &h);
    }
    /// A sync file of a fence that signals `ns` from now.
    int pendingSyncFile(uint64_t ns) {
        uint32_t s = createSyncobj();
        k.submitSyncobjWork(fd, s, 0, ns);
        return exportSyncobj(s, kExport);
    }
    /// SYNC_IOC_MERGE of `a` and `b`: the new fd, or -errno.
    int merge(int a, int b, const char* name = "m") {
        sync_merge_data data{};
        strncpy(data.name, name, sizeof(data.name));
        data.fd2 = b;
        int r = k.ioctl(a, SYNC_IOC_MERGE, &data);
        lastName = std::string(data.name, strnlen(data.name, sizeof(data.name)));
        return r < 0 ? r : data.fence;
    }
    /// SYNC_IOC_FILE_INFO asking only the count: the info, or status -errno.
    sync_file_info info(int syncFile) {
        sync_file_info i{};
        int r = k.ioctl(syncFile, SYNC_IOC_FILE_INFO, &i);
        if (r < 0)
            i.status = r;
        return i;
    }

    FakeMachine m;
    FakeKernel& k = *m.kernel;
    int fd = -1;
    std::string lastName;
};

// drm_syncobj_export_sync_file: unknown handle ENOENT, no fence EINVAL; flags beyond
// EXPORT_SYNC_FILE and TIMELINE, or a pad, EINVAL; the file holds the syncobj's fence as it is
// then: a later submission on the syncobj does not change it.
TEST_F(FakeSyncFiles, ExportingASyncobjsFenceAnswersAsTheKernel) {
    EXPECT_EQ(-ENOENT, exportSyncobj(9, kExport));
    EXPECT_EQ(-EINVAL, exportSyncobj(9, 0)) << "the plain export of an unknown handle";
    uint32_t empty = createSyncobj();
    EXPECT_EQ(-EINVAL, exportSyncobj(empty, kExport));
    EXPECT_EQ(-EINVAL, exportSyncobj(empty, kExport | (1u << 4)));
    uint32_t s = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int signaled = exportSyncobj(s, kExport);
    ASSERT_GE(signaled, 0);
    EXPECT_EQ(1, info(signaled).status);
    EXPECT_EQ(1u, info(signaled).num_fences);
    k.submitSyncobjWork(fd, s, 0, kSecond);
    int pending = exportSyncobj(s, kExport);
    ASSERT_GE(pending, 0);
    EXPECT_EQ(0, info(pending).status) << "the fence is a second away";
    EXPECT_EQ(1, info(signaled).status) << "the earlier file's fence changed";

    drm_syncobj_create c{};
    EXPECT_EQ(-ENOTTY, k.ioctl(signaled, DRM_IOCTL_SYNCOBJ_CREATE, &c)) << "DRM on a sync file";
    int syncobjFd = exportSyncobj(s, 0);
    sync_file_info i{};
    EXPECT_EQ(-ENOTTY, k.ioctl(syncobjFd, SYNC_IOC_FILE_INFO, &i)) << "a syncobj's file";
}

// drm_syncobj_import_sync_file_fence: an fd that is no sync file EINVAL (before the handle),
// an unknown handle ENOENT; the sync file's fence replaces the syncobj's, timeline and all.
TEST_F(FakeSyncFiles, ImportingASyncFileReplacesTheSyncobjsFence) {
    int pending = pendingSyncFile(kSecond);
    uint32_t s = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int syncobjFd = exportSyncobj(s, 0);
    EXPECT_EQ(-EINVAL, importSyncFile(syncobjFd, 77));
    EXPECT_EQ(-EINVAL, importSyncFile(-1, s));
    EXPECT_EQ(-ENOENT, importSyncFile(pending, 77));
    ASSERT_EQ(0, importSyncFile(pending, s));
    drm_syncobj_wait w{};
    w.handles = reinterpret_cast<uintptr_t>(&s);
    w.count_handles = 1;
    EXPECT_EQ(-ETIME, k.ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w)) << "not the sync file's fence";
    w.timeout_nsec = static_cast<int64_t>(k.nowNs + 2 * kSecond);
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w));
}

// sync_file_ioctl_merge and _fence_info: flags or pad EINVAL, an fd2 that is no sync file
// ENOENT; the merge keeps the fences not yet signaled (one signaled stub when none is) and the
// name asked, 31 bytes of it; FILE_INFO with fewer entries than fences EINVAL, else each
// fence's status written, the file's that of the first pending one.
TEST_F(FakeSyncFiles, MergingKeepsTheFencesNotYetSignaled) {
    uint32_t s = createSyncobj(DRM_SYNCOBJ_CREATE_SIGNALED);
    int signaled = exportSyncobj(s, kExport);
    int soon = pendingSyncFile(kSecond);
    int later = pendingSyncFile(3 * kSecond);
    EXPECT_EQ(-ENOENT, merge(signaled, exportSyncobj(s, 0)));
    EXPECT_EQ(-ENOENT, merge(signaled, 12345));
    sync_merge_data flagged{};
    flagged.fd2 = soon;
    flagged.flags = 1;
    EXPECT_EQ(-EINVAL, k.ioctl(signaled, SYNC_IOC_MERGE, &flagged));

    int both = merge(signaled, signaled);
    ASSERT_GE(both, 0);
    EXPECT_EQ(1u, info(both).num_fences);
    EXPECT_EQ(1, info(both).status);
    int one = merge(signaled, soon);
    EXPECT_EQ(1u, info(one).num_fences) << "a signaled fence was kept";
    EXPECT_EQ(0, info(one).status);
    int two = merge(soon, later, "a name longer than thirty-one bytes, cut");
    EXPECT_EQ(2u, info(two).num_fences);
    EXPECT_EQ(31u, lastName.size());
    EXPECT_EQ(lastName, std::string(info(two).name));

    sync_fence_info fences[2] = {};
    sync_file_info i{};
    i.num_fences = 1;
    i.sync_fence_info = reinterpret_cast<uintptr_t>(fences);
    EXPECT_EQ(-EINVAL, k.ioctl(two, SYNC_IOC_FILE_INFO, &i)) << "room for one of two fences";
    k.nowNs += 2 * kSecond; // the first has signaled, the second not yet
    i.num_fences = 2;
    ASSERT_EQ(0, k.ioctl(two, SYNC_IOC_FILE_INFO, &i));
    EXPECT_EQ(1, fences[0].status);
    EXPECT_NE(0u, fences[0].timestamp_ns);
    EXPECT_EQ(0, fences[1].status);
    EXPECT_EQ(0, i.status);
    i.pad = 1;
    EXPECT_EQ(-EINVAL, k.ioctl(two, SYNC_IOC_FILE_INFO, &i));

    SyncSetDeadline deadline{k.nowNs, 0};
    EXPECT_EQ(0, k.ioctl(two, kSyncIocSetDeadline, &deadline));
    deadline.pad = 1;
    EXPECT_EQ(-EINVAL, k.ioctl(two, kSyncIocSetDeadline, &deadline));
}

} // namespace
} // namespace fakedrm
