#pragma once
/// \file
/// Helpers shared by the render-node tests: devices on fake machines, dump and restore drivers
/// that call the Device the way the criu frontend does.

#include "drm_device.h"
#include "fake_machine.h"

#include "formats/image_store.h"
#include "formats/render_node_image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fakedrm {

/// A directory image store in its own temp dir.
struct Images {
    Images() : store(std::move(formats::openDirectoryStore(dir.path()).value())) {}
    testsupport::TempDir dir;
    std::unique_ptr<formats::ImageStore> store;
};

/// A DrmDevice on `m` writing to / reading from `images`.
inline std::unique_ptr<drm::DrmDevice> makeDevice(FakeMachine& m, Images& images) {
    return std::make_unique<drm::DrmDevice>(m.env(images.store.get()), m.kernel, m.paths);
}

/// Dumps the files criu hands over (`refs`, closed afterwards) of process `pid` into `store`
/// as criu 4.0+ does (pause, checkpoint, then each file), or as older criu does (each file
/// alone) when `deviceHooks` is false.
inline base::Result<void> dumpRefs(FakeMachine& m, formats::ImageStore& store, int pid,
                                   const std::vector<hal::FileRef>& refs, bool deviceHooks = true) {
    drm::DrmDevice dev(m.env(&store), m.kernel, m.paths);
    base::Result<void> result = base::success();
    if (deviceHooks) {
        auto had = dev.pauseProcess(pid);
        if (!had.ok() || !had.value())
            result = had.ok() ? base::makeError(base::ErrorCode::NotFound, "nothing to pause")
                              : std::move(had).error();
        if (result.ok())
            result = dev.checkpointProcess(pid);
    }
    for (const hal::FileRef& ref : refs) {
        if (result.ok()) {
            auto mine = dev.claimFile(ref);
            if (!mine.ok() || !mine.value())
                result = mine.ok() ? base::makeError(base::ErrorCode::NotFound, "%s not claimed",
                                                     ref.path.c_str())
                                   : std::move(mine).error();
        }
        if (result.ok())
            result = dev.dumpFile(ref);
        m.kernel->close(ref.fd);
    }
    HAL_TRY(result);
    return dev.finishDump(true);
}

/// Dumps `files` of process `pid` (see dumpRefs).
inline base::Result<void> dump(FakeMachine& m, Images& images, int pid,
                               const std::vector<std::pair<AppFile, uint32_t>>& files,
                               bool deviceHooks = true) {
    std::vector<hal::FileRef> refs;
    for (const auto& [file, id] : files)
        refs.push_back(m.criuFile(file, id));
    return dumpRefs(m, *images.store, pid, refs, deviceHooks);
}

/// Expects the BO `handle` of `restoredFd` to hold what `appFd`'s BO held, mapped the same way.
inline void expectSameBo(FakeMachine& src, const AppFile& app, FakeMachine& dst, int restoredFd,
                         uint32_t handle) {
    auto a = src.kernel->fileOf(app.fd);
    auto b = dst.kernel->fileOf(restoredFd);
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(b->handles.count(handle)) << "handle " << handle << " missing";
    const Bo& ab = *a->handles.at(handle);
    const Bo& bb = *b->handles.at(handle);
    EXPECT_EQ(ab.size, bb.size);
    EXPECT_EQ(ab.domains, bb.domains);
    EXPECT_EQ(ab.flags, bb.flags);
    if (ab.domains & 0x7) {
        EXPECT_TRUE(src.contents(app.fd, handle) == dst.contents(restoredFd, handle))
            << "contents of handle " << handle << " differ";
    }
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>> va, vb;
    for (const Mapping& mp : a->vm)
        if (mp.bo.get() == &ab)
            va.emplace_back(mp.addr, mp.size, mp.offset, mp.flags);
    for (const Mapping& mp : b->vm)
        if (mp.bo.get() == &bb)
            vb.emplace_back(mp.addr, mp.size, mp.offset, mp.flags);
    std::sort(va.begin(), va.end());
    std::sort(vb.begin(), vb.end());
    EXPECT_EQ(va, vb) << "mappings of handle " << handle << " differ";
}

/// The error of restoring file `id` from `images` on `m` (a test failure when it succeeds).
inline std::string restoreErrorOf(FakeMachine& m, Images& images, uint32_t id) {
    auto fd = makeDevice(m, images)->restoreFile(id);
    EXPECT_FALSE(fd.ok());
    return fd.ok() ? "" : fd.error().describe();
}

/// Rewrites the render-node image of file `id` in `images` with `edit` applied.
inline void editRenderNodeImage(Images& images, uint32_t id,
                                const std::function<void(formats::RenderNodeImage&)>& edit) {
    auto image = formats::readRenderNodeImage(*images.store, id);
    ASSERT_TRUE(image.ok());
    edit(image.value());
    ASSERT_TRUE(formats::writeRenderNodeImage(*images.store, image.value()).ok());
}

/// The default GPU of the tests at a render minor.
inline GpuSpec gpuAt(unsigned minor) {
    GpuSpec s;
    s.minor = minor;
    return s;
}

} // namespace fakedrm
