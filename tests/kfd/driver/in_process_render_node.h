#pragma once
/// \file
/// A render-node file of a driver run in the test's own process (render_node_service.h), and the
/// DRM ioctls of the test's process on it as the interposer sends them: the driver reads and
/// writes the user buffers they point at in this process's memory.
#include "driver_server.h"
#include "render_node_protocol.h"
#include "uapi.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace kfddrivertest {

/// A render-node file of a driver run in this process, and the DRM ioctls of this process on it.
class InProcessRenderNode : public ::testing::Test {
protected:
    void SetUp() override {
        std::string error;
        server_ = std::make_unique<kfddriver::DriverServer>(dir_.path(), kfddriver::MachineSpec{},
                                                            &error);
        ASSERT_EQ("", error);
        file_ = openRenderNode();
        ASSERT_GE(file_, 0);
    }

    /// A new file of renderD128 of this process: its id, or -errno.
    int64_t openRenderNode() {
        kfddriver::Message open;
        open.op = static_cast<uint32_t>(kfddriver::Op::Open);
        open.pid = getpid();
        open.text = "/dev/dri/renderD128";
        kfddriver::Message opened = server_->handle(open);
        return opened.pid < 0 ? opened.pid : opened.file;
    }

    /// The DRM ioctl `request` of this process on file `file` (-1: the test's), as the
    /// interposer sends it: the driver's answer, *arg as the driver gives it back.
    template <typename T>
    kfddriver::Message call(unsigned long request, T* arg, int64_t file = -1) {
        kfddriver::Message call;
        call.op = static_cast<uint32_t>(kfddriver::Op::Ioctl);
        call.pid = getpid();
        call.file = file < 0 ? file_ : file;
        call.a = request;
        call.b = kfddriver::kDrmUserIoctl;
        call.text.assign(reinterpret_cast<const char*>(arg), sizeof(T));
        kfddriver::Message answer = server_->handle(call);
        if (answer.text.size() == sizeof(T))
            memcpy(arg, answer.text.data(), sizeof(T));
        return answer;
    }
    /// The same, its result only.
    template <typename T> int ioctl(unsigned long request, T* arg, int64_t file = -1) {
        return call(request, arg, file).pid;
    }

    /// Where the driver says a mapping of `len` bytes at `offset` of file `file` lies: its
    /// answer (pid 0 or -errno, `a` the place in the machine's memory).
    kfddriver::Message mapping(int64_t file, uint64_t offset, uint64_t len) {
        kfddriver::Message m;
        m.op = static_cast<uint32_t>(kfddriver::Op::Mapping);
        m.pid = getpid();
        m.file = file;
        m.a = offset;
        m.b = len;
        return server_->handle(m);
    }
    /// fstat of file `file` as the driver answers it: 0 (*st set) or -errno.
    int fstat(int64_t file, struct stat* st) {
        kfddriver::Message m;
        m.op = static_cast<uint32_t>(kfddriver::Op::Fstat);
        m.pid = getpid();
        m.file = file;
        kfddriver::Message answer = server_->handle(m);
        if (answer.pid == 0 && answer.text.size() != sizeof(*st))
            return -EPROTO;
        if (answer.pid == 0)
            memcpy(st, answer.text.data(), sizeof(*st));
        return static_cast<int>(answer.pid);
    }

    uint32_t createBo(uint64_t size) {
        drm_amdgpu_gem_create create{};
        create.in.bo_size = size;
        create.in.domains = AMDGPU_GEM_DOMAIN_GTT;
        EXPECT_EQ(0, ioctl(DRM_IOCTL_AMDGPU_GEM_CREATE, &create));
        return create.out.handle;
    }

    testsupport::TempDir dir_;
    std::unique_ptr<kfddriver::DriverServer> server_;
    int64_t file_ = -1;
};

} // namespace kfddrivertest
