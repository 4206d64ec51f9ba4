// GPU contexts and syncobjs of render-node files: found at dump, restored at their numbers and
// in their state, and what cannot be is refused, naming the file and the object.
#include "drm_fixture.h"
#include "file_objects.h"

#include "formats/render_node_image.h"

#include <cerrno>
#include <map>
#include <tuple>

namespace fakedrm {
namespace {

constexpr int kPid = 100;
constexpr uint64_t kSecond = 1000000000ull;

// The application's calls, raw ioctls on its fd.
uint32_t allocCtx(FakeKernel& k, int fd) {
    drm_amdgpu_ctx a{};
    a.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &a));
    return a.out.alloc.ctx_id;
}
int ctxOp(FakeKernel& k, int fd, uint32_t op, uint32_t id, uint64_t* flags = nullptr) {
    drm_amdgpu_ctx a{};
    a.in.op = op;
    a.in.ctx_id = id;
    int r = k.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &a);
    if (flags)
        *flags = a.out.state.flags;
    return r;
}
uint32_t createSyncobj(FakeKernel& k, int fd, uint32_t flags = 0) {
    drm_syncobj_create c{};
    c.flags = flags;
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c));
    return c.handle;
}
int destroySyncobj(FakeKernel& k, int fd, uint32_t handle) {
    drm_syncobj_destroy d{};
    d.handle = handle;
    return k.ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}
/// A drm_syncobj_timeline_array ioctl (QUERY, TIMELINE_SIGNAL) on one syncobj and point.
int timelineArrayOp(FakeKernel& k, int fd, unsigned long request, uint32_t handle, uint64_t* point,
                    uint32_t flags = 0) {
    drm_syncobj_timeline_array a{};
    a.handles = reinterpret_cast<uintptr_t>(&handle);
    a.points = reinterpret_cast<uintptr_t>(point);
    a.count_handles = 1;
    a.flags = flags;
    return k.ioctl(fd, request, &a);
}
int timelineSignal(FakeKernel& k, int fd, uint32_t handle, uint64_t point) {
    return timelineArrayOp(k, fd, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, handle, &point);
}
/// SYNCOBJ_TIMELINE_WAIT polling point `point` (0: the fence): 0, -ETIME, -EINVAL (no fence).
int pollSyncobj(FakeKernel& k, int fd, uint32_t handle, uint64_t point) {
    drm_syncobj_timeline_wait w{};
    w.handles = reinterpret_cast<uintptr_t>(&handle);
    w.points = reinterpret_cast<uintptr_t>(&point);
    w.count_handles = 1;
    return k.ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
}
/// SYNCOBJ_QUERY: the timeline's value, or the ioctl's error (negative).
int64_t querySyncobj(FakeKernel& k, int fd, uint32_t handle, uint32_t flags = 0) {
    uint64_t point = 0;
    int r = timelineArrayOp(k, fd, DRM_IOCTL_SYNCOBJ_QUERY, handle, &point, flags);
    return r < 0 ? r : static_cast<int64_t>(point);
}

// ------------------------------------------------------------------ the fake's semantics

/// One open render node of a fake machine.
class FakeFileObjects : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        f = m.open(kPid, 5, 128);
    }
    FakeMachine m;
    AppFile f;
    FakeKernel& k = *m.kernel;
};

// amdgpu_ctx_ioctl: ids lowest free from 1; an id the file does not hold, or flags where none are
// defined, EINVAL; a priority that is no level is taken as NORMAL.
TEST_F(FakeFileObjects, ContextsAreNumberedLowestFreeFromOneAndUnknownIdsAreEinval) {
    EXPECT_EQ(allocCtx(k, f.fd), 1u);
    EXPECT_EQ(allocCtx(k, f.fd), 2u);
    EXPECT_EQ(allocCtx(k, f.fd), 3u);
    EXPECT_EQ(0, ctxOp(k, f.fd, AMDGPU_CTX_OP_FREE_CTX, 2));
    EXPECT_EQ(-EINVAL, ctxOp(k, f.fd, AMDGPU_CTX_OP_FREE_CTX, 2));
    EXPECT_EQ(-EINVAL, ctxOp(k, f.fd, AMDGPU_CTX_OP_QUERY_STATE2, 2));
    EXPECT_EQ(-EINVAL, ctxOp(k, f.fd, AMDGPU_CTX_OP_GET_STABLE_PSTATE, 9));
    EXPECT_EQ(0, ctxOp(k, f.fd, AMDGPU_CTX_OP_GET_STABLE_PSTATE, 3));
    EXPECT_EQ(-EINVAL, ctxOp(k, f.fd, 77, 3)) << "an unknown op";
    drm_amdgpu_ctx a{};
    a.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    a.in.priority = 12345; // garbage: NORMAL
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_AMDGPU_CTX, &a));
    EXPECT_EQ(a.out.alloc.ctx_id, 2u);
    EXPECT_EQ(k.fileOf(f.fd)->contexts.at(2).priority, AMDGPU_CTX_PRIORITY_NORMAL);
    a = {};
    a.in.op = AMDGPU_CTX_OP_QUERY_STATE2;
    a.in.ctx_id = 1;
    a.in.flags = 1;
    EXPECT_EQ(-EINVAL, k.ioctl(f.fd, DRM_IOCTL_AMDGPU_CTX, &a));
    k.fileOf(f.fd)->contexts.at(1).query2Flags = AMDGPU_CTX_QUERY2_FLAGS_GUILTY;
    uint64_t flags = 0;
    EXPECT_EQ(0, ctxOp(k, f.fd, AMDGPU_CTX_OP_QUERY_STATE2, 1, &flags));
    EXPECT_EQ(flags, uint64_t{AMDGPU_CTX_QUERY2_FLAGS_GUILTY});
}

// drm_syncobj.c: handles lowest free from 1; DESTROY of an unknown handle EINVAL, QUERY and WAIT
// ENOENT, HANDLE_TO_FD EINVAL; an import of a syncobj's fd is the same syncobj at the lowest free
// handle; WAIT on no fence EINVAL (ETIME with WAIT_FOR_SUBMIT), on a pending one ETIME at its
// deadline; a timeline's value is its newest point all below which signaled.
TEST_F(FakeFileObjects, SyncobjsAnswerAsTheKernelDoes) {
    EXPECT_EQ(createSyncobj(k, f.fd), 1u);
    EXPECT_EQ(createSyncobj(k, f.fd), 2u);
    EXPECT_EQ(0, destroySyncobj(k, f.fd, 1));
    EXPECT_EQ(-EINVAL, destroySyncobj(k, f.fd, 1));
    EXPECT_EQ(querySyncobj(k, f.fd, 1), -ENOENT);
    EXPECT_EQ(pollSyncobj(k, f.fd, 1, 0), -ENOENT);
    drm_syncobj_handle h{};
    h.handle = 1;
    EXPECT_EQ(-EINVAL, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h));
    h.handle = 2;
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h));
    drm_syncobj_handle in{};
    in.fd = h.fd;
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &in));
    EXPECT_EQ(in.handle, 1u);
    k.close(h.fd);
    EXPECT_EQ(k.fileOf(f.fd)->syncobjs.at(1), k.fileOf(f.fd)->syncobjs.at(2)) << "one syncobj";

    EXPECT_EQ(pollSyncobj(k, f.fd, 2, 0), -EINVAL) << "no fence";
    uint32_t two = 2;
    drm_syncobj_wait w{};
    w.handles = reinterpret_cast<uintptr_t>(&two);
    w.count_handles = 1;
    w.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
    EXPECT_EQ(-ETIME, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_WAIT, &w));
    drm_syncobj_array arr{};
    arr.handles = reinterpret_cast<uintptr_t>(&two);
    arr.count_handles = 1;
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_SIGNAL, &arr));
    EXPECT_EQ(pollSyncobj(k, f.fd, 1, 0), 0) << "signaled through the other handle";
    EXPECT_EQ(pollSyncobj(k, f.fd, 1, 1), -EINVAL) << "a plain fence has no points";
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_RESET, &arr));
    EXPECT_EQ(pollSyncobj(k, f.fd, 2, 0), -EINVAL);

    uint32_t t = createSyncobj(k, f.fd);
    ASSERT_EQ(0, timelineSignal(k, f.fd, t, 3));
    k.submitSyncobjWork(f.fd, t, 5, 2 * kSecond);
    EXPECT_EQ(querySyncobj(k, f.fd, t), 3);
    EXPECT_EQ(querySyncobj(k, f.fd, t, DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED), 5);
    EXPECT_EQ(pollSyncobj(k, f.fd, t, 3), 0);
    EXPECT_EQ(pollSyncobj(k, f.fd, t, 4), -ETIME) << "point 4 is the pending point 5's";
    EXPECT_EQ(pollSyncobj(k, f.fd, t, 6), -EINVAL) << "not submitted";
    drm_syncobj_transfer tr{};
    tr.src_handle = t;
    tr.src_point = 5;
    tr.dst_handle = 2;
    ASSERT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &tr));
    EXPECT_EQ(pollSyncobj(k, f.fd, 2, 0), -ETIME) << "the binary syncobj holds point 5's fence";
    uint64_t point = 5;
    drm_syncobj_timeline_wait tw{};
    tw.handles = reinterpret_cast<uintptr_t>(&t);
    tw.points = reinterpret_cast<uintptr_t>(&point);
    tw.count_handles = 1;
    tw.timeout_nsec = static_cast<int64_t>(k.nowNs + 3 * kSecond);
    uint64_t before = k.nowNs;
    EXPECT_EQ(0, k.ioctl(f.fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &tw));
    EXPECT_EQ(k.nowNs, before + 2 * kSecond) << "the wait lasts until the work is done";
    EXPECT_EQ(querySyncobj(k, f.fd, t), 5);
    EXPECT_EQ(pollSyncobj(k, f.fd, 2, 0), 0);
}

// ------------------------------------------------------------------ dump and restore

class DrmContextsSyncobjs : public ::testing::Test {
protected:
    void SetUp() override {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        dst.addGpu(gpuAt(128), "0000:03:00.0");
        file = src.open(kPid, 5, 128);
        src.createBo(file, 64 << 10, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    }
    FakeKernel& app() { return *src.kernel; }
    base::Result<void> dumpIt() { return dump(src, images, kPid, {{file, 1}}); }
    std::string dumpError() {
        auto r = dumpIt();
        EXPECT_FALSE(r.ok());
        return r.ok() ? "" : r.error().describe();
    }
    base::Result<int> restoreIt() { return makeDevice(dst, images)->restoreFile(1); }
    std::string restoreError() { return restoreErrorOf(dst, images, 1); }
    void rewriteImage(const std::function<void(formats::RenderNodeImage&)>& edit) {
        editRenderNodeImage(images, 1, edit);
    }

    FakeMachine src, dst;
    Images images;
    AppFile file;
    const std::string kFile = "/dev/dri/renderD128 (fd 5 of process 100)";
};

// libdrm_amdgpu dups the fd it is given (amdgpu_device_initialize), so a process holds its DRM
// file by two fds: the file is found and saved once, its numbers probed once (one context found,
// then kMaxObjectGaps + 1 unused ids), not once per fd.
TEST_F(DrmContextsSyncobjs, AFileHeldByTwoFdsIsProbedAndSavedOnce) {
    allocCtx(app(), file.fd);
    src.dup(file, 6);
    app().ioctlCounts.clear();
    auto dumped = dumpIt();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    EXPECT_EQ(app().ioctlCounts[DRM_IOCTL_AMDGPU_CTX], static_cast<int>(drm::kMaxObjectGaps) + 2);
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image.value().contexts.size(), 1u);
    EXPECT_EQ(image.value().bos.size(), 1u);
}

// The process of the task: contexts 1 and 3 (2 freed), a signaled binary syncobj, an unsignaled
// one, a freed handle, and a timeline at point 7.
TEST_F(DrmContextsSyncobjs, AreRestoredAtTheirNumbersInTheirState) {
    for (int i = 0; i < 3; ++i)
        allocCtx(app(), file.fd);
    ASSERT_EQ(0, ctxOp(app(), file.fd, AMDGPU_CTX_OP_FREE_CTX, 2));
    uint32_t signaled = createSyncobj(app(), file.fd, DRM_SYNCOBJ_CREATE_SIGNALED);
    uint32_t unsignaled = createSyncobj(app(), file.fd);
    uint32_t freed = createSyncobj(app(), file.fd);
    uint32_t timeline = createSyncobj(app(), file.fd);
    ASSERT_EQ(0, destroySyncobj(app(), file.fd, freed));
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 3));
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 7));
    ASSERT_EQ((std::vector<uint32_t>{signaled, unsignaled, freed, timeline}),
              (std::vector<uint32_t>{1, 2, 3, 4}));

    ASSERT_TRUE(dumpIt().ok()) << dumpIt().error().describe();
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    ASSERT_EQ(image.value().contexts.size(), 2u);
    EXPECT_EQ(image.value().contexts[0].id, 1u);
    EXPECT_EQ(image.value().contexts[1].id, 3u);
    ASSERT_EQ(image.value().syncobjs.size(), 3u);
    EXPECT_TRUE(image.value().syncobjs[0].signaled);
    EXPECT_FALSE(image.value().syncobjs[1].signaled);
    EXPECT_FALSE(image.value().syncobjs[1].timelinePoint);
    EXPECT_EQ(image.value().syncobjs[2].handle, 4u);
    EXPECT_EQ(image.value().syncobjs[2].timelinePoint, std::optional<uint64_t>(7));

    auto fd = restoreIt();
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    FakeKernel& k = *dst.kernel;
    auto restored = k.fileOf(fd.value());
    std::vector<uint32_t> ids, handles;
    for (const auto& [id, ctx] : restored->contexts)
        ids.push_back(id);
    for (const auto& [handle, obj] : restored->syncobjs)
        handles.push_back(handle);
    EXPECT_EQ(ids, (std::vector<uint32_t>{1, 3})) << "the filler of id 2 is freed";
    EXPECT_EQ(handles, (std::vector<uint32_t>{1, 2, 4})) << "the filler of handle 3 is destroyed";
    // Work named by the old numbers is accepted (the fake has no CS ioctl: QUERY_STATE2, the
    // lookup a submission makes first, finds the context).
    uint64_t flags = ~0ull;
    EXPECT_EQ(0, ctxOp(k, fd.value(), AMDGPU_CTX_OP_QUERY_STATE2, 3, &flags));
    EXPECT_EQ(flags, 0u);
    EXPECT_EQ(0, ctxOp(k, fd.value(), AMDGPU_CTX_OP_QUERY_STATE2, 1));
    EXPECT_EQ(-EINVAL, ctxOp(k, fd.value(), AMDGPU_CTX_OP_QUERY_STATE2, 2));
    EXPECT_EQ(0, pollSyncobj(k, fd.value(), 1, 0)) << "signaled";
    EXPECT_EQ(-EINVAL, pollSyncobj(k, fd.value(), 2, 0)) << "no fence";
    EXPECT_EQ(querySyncobj(k, fd.value(), 4), 7);
    EXPECT_EQ(0, pollSyncobj(k, fd.value(), 4, 7));
    EXPECT_EQ(-EINVAL, pollSyncobj(k, fd.value(), 4, 8)) << "point 8 was never submitted";
    // The application's next numbers are the kernel's next free ones, as before the dump.
    EXPECT_EQ(allocCtx(k, fd.value()), 2u);
    EXPECT_EQ(createSyncobj(k, fd.value()), 3u);
}

// criu before 4.0 dumps the file alone (DUMP_EXT_FILE, no device hooks): the same objects saved.
TEST_F(DrmContextsSyncobjs, ADumpWithoutDeviceHooksSavesThemToo) {
    allocCtx(app(), file.fd);
    allocCtx(app(), file.fd);
    ASSERT_EQ(0, ctxOp(app(), file.fd, AMDGPU_CTX_OP_FREE_CTX, 1));
    uint32_t timeline = createSyncobj(app(), file.fd);
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 7));
    auto dumped = dump(src, images, kPid, {{file, 1}}, false);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto fd = restoreIt();
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    auto restored = dst.kernel->fileOf(fd.value());
    EXPECT_EQ(restored->contexts.size(), 1u);
    EXPECT_EQ(restored->contexts.count(2), 1u);
    EXPECT_EQ(querySyncobj(*dst.kernel, fd.value(), 1), 7);
}

TEST_F(DrmContextsSyncobjs, FencesStillPendingAreWaitedForAndSavedSignaled) {
    uint32_t binary = createSyncobj(app(), file.fd);
    uint32_t timeline = createSyncobj(app(), file.fd);
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 5));
    app().submitSyncobjWork(file.fd, binary, 0, 2 * kSecond);
    app().submitSyncobjWork(file.fd, timeline, 9, 3 * kSecond);
    EXPECT_EQ(querySyncobj(app(), file.fd, timeline), 5);
    ASSERT_TRUE(dumpIt().ok()) << dumpIt().error().describe();
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    ASSERT_EQ(image.value().syncobjs.size(), 2u);
    EXPECT_TRUE(image.value().syncobjs[0].signaled);
    EXPECT_EQ(image.value().syncobjs[1].timelinePoint, std::optional<uint64_t>(9));
}

TEST_F(DrmContextsSyncobjs, AFenceThatNeverSignalsIsRefusedNamingTheFileAndSyncobj) {
    createSyncobj(app(), file.fd, DRM_SYNCOBJ_CREATE_SIGNALED);
    uint32_t hung = createSyncobj(app(), file.fd);
    app().submitSyncobjWork(file.fd, hung, 0, Bo::kNever);
    std::string e = dumpError();
    EXPECT_NE(e.find("syncobj 2 of " + kFile + " cannot be saved: its fence is still pending"),
              std::string::npos)
        << e;
    EXPECT_FALSE(images.store->exists(formats::renderNodeImageName(1)));
}

TEST_F(DrmContextsSyncobjs, ATimelinePointThatNeverSignalsIsRefusedNamingIt) {
    uint32_t timeline = createSyncobj(app(), file.fd);
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 2));
    app().submitSyncobjWork(file.fd, timeline, 4, Bo::kNever);
    std::string e = dumpError();
    EXPECT_NE(e.find("syncobj 1 of " + kFile +
                     " cannot be saved: timeline point 4 is still "
                     "pending"),
              std::string::npos)
        << e;
}

// A context a new one would not reproduce: the kernel reports it guilty, reset, VRAM-lost or in
// a reset. Mesa takes each as a lost device; a fresh context would hide it.
TEST_F(DrmContextsSyncobjs, ALostContextIsRefusedNamingTheFileAndContext) {
    const std::map<uint64_t, std::string> lost = {
        {AMDGPU_CTX_QUERY2_FLAGS_GUILTY, "guilty of a GPU hang"},
        {AMDGPU_CTX_QUERY2_FLAGS_RESET, "reset since it was made"},
        {AMDGPU_CTX_QUERY2_FLAGS_VRAMLOST, "VRAM-lost"},
        {drm::kCtxQuery2ResetInProgress, "in a GPU reset"},
    };
    allocCtx(app(), file.fd);
    allocCtx(app(), file.fd);
    for (const auto& [flag, says] : lost) {
        app().fileOf(file.fd)->contexts.at(2).query2Flags = flag;
        std::string e = dumpError();
        EXPECT_NE(
            e.find("context 2 of " + kFile + " cannot be restored: the kernel reports it " + says),
            std::string::npos)
            << e;
    }
    // RAS notices are no state of the context.
    app().fileOf(file.fd)->contexts.at(2).query2Flags = AMDGPU_CTX_QUERY2_FLAGS_RAS_CE;
    auto r = dumpIt();
    EXPECT_TRUE(r.ok()) << r.error().describe();
}

// The dump probes numbers until more were unused than a restore fills (kMaxObjectGaps): an
// object just within is found, one beyond cannot be restored at its number and is not looked for.
TEST_F(DrmContextsSyncobjs, ProbingReachesTheLastNumberARestoreCanFill) {
    uint32_t last = drm::kMaxObjectGaps + 2; // ids 2..kMaxObjectGaps+1 unused
    for (uint32_t i = 1; i <= last + 1; ++i)
        allocCtx(app(), file.fd);
    for (uint32_t id = 2; id <= last - 1; ++id)
        ASSERT_EQ(0, ctxOp(app(), file.fd, AMDGPU_CTX_OP_FREE_CTX, id));
    ASSERT_EQ(0, ctxOp(app(), file.fd, AMDGPU_CTX_OP_FREE_CTX, last + 1));
    ASSERT_TRUE(dumpIt().ok());
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    ASSERT_EQ(image.value().contexts.size(), 2u);
    EXPECT_EQ(image.value().contexts[1].id, last);
    auto fd = restoreIt();
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->contexts.size(), 2u);
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->contexts.count(last), 1u);
}

// Images are hostile input: their numbers are checked before any GPU is touched, and the errors
// name the image and the field.
TEST_F(DrmContextsSyncobjs, ImageTablesTheKernelCannotReproduceFailBeforeAnyGpuIsTouched) {
    ASSERT_TRUE(dumpIt().ok());
    struct Case {
        std::function<void(formats::RenderNodeImage&)> edit;
        std::string says;
    };
    const std::vector<Case> cases = {
        {[](formats::RenderNodeImage& i) {
             i.contexts = {{0, 0}};
         },
         "amdgpu-renderD-1.img: context 0 has id 0, which the kernel never hands out"},
        {[](formats::RenderNodeImage& i) {
             i.contexts = {{4, 0}, {4, 0}};
         },
         "amdgpu-renderD-1.img: context 1 has id 4, which context 0 has already"},
        {[](formats::RenderNodeImage& i) {
             i.contexts = {{drm::kMaxObjectGaps + 2, 0}};
         },
         "amdgpu-renderD-1.img: context 0 has id 4098, which leaves 4097 ids below it unused"},
        {[](formats::RenderNodeImage& i) {
             i.contexts = {{1, 0}, {2, AMDGPU_CTX_QUERY2_FLAGS_GUILTY}};
         },
         "amdgpu-renderD-1.img: context 1 (id 2) has query2_flags 0x4: it was guilty"},
        {[](formats::RenderNodeImage& i) {
             i.syncobjs = {{0x80000000u, false, std::nullopt}};
         },
         "amdgpu-renderD-1.img: syncobj 0 has handle 2147483648, above the highest the kernel "
         "hands out"},
        {[](formats::RenderNodeImage& i) {
             i.syncobjs = {{1, true, 7}};
         },
         "amdgpu-renderD-1.img: syncobj 0 (handle 1) has both a timeline_point and signaled"},
    };
    for (const Case& c : cases) {
        rewriteImage([&c](formats::RenderNodeImage& i) {
            i.contexts.clear();
            i.syncobjs.clear();
            c.edit(i);
        });
        dst.kernel->ioctlCounts.clear();
        std::string e = restoreError();
        EXPECT_NE(e.find(c.says), std::string::npos) << e;
        EXPECT_TRUE(dst.kernel->ioctlCounts.empty()) << "no GPU is touched: " << c.says;
    }
}

// More objects than a restore makes in one file (kMaxObjectsPerFile) are refused naming the image
// and its list (shown on a kind of two at most: a million entries would make a slow test).
TEST(DrmNumberPlan, MoreObjectsThanARestoreMakesAreRefusedNamingTheImageAndList) {
    drm::NumberedKind two = drm::kSyncobjHandles;
    two.maxObjects = 2;
    auto plan = drm::planNumbers({1, 2, 3}, two, "amdgpu-renderD-9.img");
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().describe().find("amdgpu-renderD-9.img holds 3 syncobjs "
                                           "(syncobj_entries), more than the 2 a restore makes"),
              std::string::npos)
        << plan.error().describe();
    EXPECT_TRUE(drm::planNumbers({1, 2}, two, "amdgpu-renderD-9.img").ok());
}

// A kernel error from any of the calls fails the dump or the restore, naming the call.
TEST_F(DrmContextsSyncobjs, KernelErrorsFailTheDumpAndTheRestoreNamingTheCall) {
    allocCtx(app(), file.fd);
    allocCtx(app(), file.fd);
    allocCtx(app(), file.fd);
    ASSERT_EQ(0, ctxOp(app(), file.fd, AMDGPU_CTX_OP_FREE_CTX, 2));
    createSyncobj(app(), file.fd, DRM_SYNCOBJ_CREATE_SIGNALED);
    createSyncobj(app(), file.fd);
    uint32_t timeline = createSyncobj(app(), file.fd);
    ASSERT_EQ(0, destroySyncobj(app(), file.fd, 2));
    ASSERT_EQ(0, timelineSignal(app(), file.fd, timeline, 7));
    const std::vector<std::pair<unsigned long, std::string>> dumpCalls = {
        {DRM_IOCTL_AMDGPU_CTX, "AMDGPU_CTX QUERY_STATE2 of context 1 failed"},
        {DRM_IOCTL_SYNCOBJ_QUERY, "SYNCOBJ_QUERY of syncobj 1 failed"},
        {DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, "SYNCOBJ_TIMELINE_WAIT of point 0 of syncobj 1 failed"},
    };
    for (const auto& [request, says] : dumpCalls) {
        app().failIoctl(request, 1, EIO);
        std::string e = dumpError();
        EXPECT_NE(e.find(says), std::string::npos) << e;
    }
    ASSERT_TRUE(dumpIt().ok());
    const std::vector<std::tuple<unsigned long, int, std::string>> restoreCalls = {
        {DRM_IOCTL_AMDGPU_CTX, 1, "AMDGPU_CTX ALLOC_CTX failed"},
        {DRM_IOCTL_AMDGPU_CTX, 4, "AMDGPU_CTX FREE_CTX of context 2 failed"},
        {DRM_IOCTL_SYNCOBJ_CREATE, 1, "SYNCOBJ_CREATE failed"},
        {DRM_IOCTL_SYNCOBJ_DESTROY, 1, "SYNCOBJ_DESTROY of syncobj 2 failed"},
        {DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, 1,
         "SYNCOBJ_TIMELINE_SIGNAL of point 7 of syncobj 3 failed"},
    };
    for (const auto& [request, nth, says] : restoreCalls) {
        dst.kernel->failIoctl(request, nth, EIO);
        std::string e = restoreError();
        EXPECT_NE(e.find(says), std::string::npos) << e;
        EXPECT_EQ(dst.kernel->openFds(), 0u) << "the failed restore closed its file";
    }
}

// An image of an earlier version (no contexts or syncobjs) restores a file without any.
TEST_F(DrmContextsSyncobjs, AnImageWithoutThemRestoresAFileWithoutThem) {
    allocCtx(app(), file.fd);
    createSyncobj(app(), file.fd);
    ASSERT_TRUE(dumpIt().ok());
    rewriteImage([](formats::RenderNodeImage& i) {
        i.contexts.clear();
        i.syncobjs.clear();
    });
    auto fd = restoreIt();
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_TRUE(dst.kernel->fileOf(fd.value())->contexts.empty());
    EXPECT_TRUE(dst.kernel->fileOf(fd.value())->syncobjs.empty());
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->handles.size(), 1u);
}

// A kernel that hands out another number than the lowest free one fails the restore naming it,
// rather than restoring an object under a wrong number.
TEST_F(DrmContextsSyncobjs, AKernelThatGivesAnotherNumberFailsTheRestore) {
    createSyncobj(app(), file.fd);
    createSyncobj(app(), file.fd);
    ASSERT_TRUE(dumpIt().ok());
    dst.kernel->syncobjHandleBase = 5;
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: the kernel gave handle 5 to syncobj 0 (handle 1)"),
              std::string::npos)
        << e;
}

} // namespace
} // namespace fakedrm
