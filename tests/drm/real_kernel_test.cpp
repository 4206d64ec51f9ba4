// The real KernelInterface on this machine, where no GPU is needed: system calls on ordinary
// files and on ourselves, and the backend library loaded and probed like the loader does.
#include "amdgpu-drm/kernel_interface.h"

#include "hal/backend.h"
#include "temp_dir.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

namespace {

TEST(DrmRealKernel, MonotonicClockIsTheOneOfAbsoluteIoctlTimeouts) {
    auto k = drm::makeRealKernel();
    timespec before{};
    clock_gettime(CLOCK_MONOTONIC, &before);
    uint64_t ns = k->monotonicNs();
    timespec after{};
    clock_gettime(CLOCK_MONOTONIC, &after);
    EXPECT_GE(ns, static_cast<uint64_t>(before.tv_sec) * 1000000000ull + before.tv_nsec);
    EXPECT_LE(ns, static_cast<uint64_t>(after.tv_sec) * 1000000000ull + after.tv_nsec);
}

TEST(DrmRealKernel, SystemCallsOnOrdinaryFiles) {
    auto k = drm::makeRealKernel();
    testsupport::TempDir dir;
    testsupport::writeFile(dir / "f", std::string(8192, 'q'));
    EXPECT_EQ(k->open(dir / "missing"), -ENOENT);
    int fd = k->open(dir / "f");
    ASSERT_GE(fd, 0);
    struct stat st {};
    EXPECT_EQ(k->fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 8192);
    EXPECT_EQ(k->fstat(-1, &st), -EBADF);
    int d = k->dup(fd);
    ASSERT_GE(d, 0);
    EXPECT_EQ(k->dup(-1), -EBADF);
    int x = 0;
    EXPECT_EQ(k->ioctl(fd, 0x1234, &x), -ENOTTY);
    int err = 0;
    void* p = k->mmap(fd, 4096, 4096, PROT_READ, &err);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(static_cast<char*>(p)[0], 'q');
    k->munmap(p, 4096);
    EXPECT_EQ(k->mmap(-1, 0, 4096, PROT_READ, &err), nullptr);
    EXPECT_EQ(err, EBADF);
    EXPECT_EQ(k->selfPid(), getpid());
    // Our own fds: pidfd_getfd and kcmp see the same open file (where the kernel allows them).
    int got = k->pidGetFd(getpid(), fd);
    if (got >= 0) {
        EXPECT_EQ(k->sameFile(getpid(), fd, getpid(), got), 1);
        k->close(got);
    }
    EXPECT_LT(k->pidGetFd(getpid(), 99999), 0);
    EXPECT_LT(k->sameFile(getpid(), fd, getpid(), 99999), 0);
    sdma::Device dev{};
    EXPECT_LT(k->libdrm().deviceInitialize(fd, &dev), 0) << "not a DRM device";
    k->close(d);
    k->close(fd);
}

TEST(DrmRealKernel, TheBackendLibraryLoadsAndFindsNoGpuHere) {
    std::string lib = std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/amdgpu-drm.so";
    // The backend is built before this test (add_dependencies): a library that does not load
    // (an undefined symbol, a missing dependency) is the failure this test is for. A backend has
    // no search path: the HAL's shared library it stands on is loaded first, as the registry
    // does (hal/README.md), from core/ of the backend directory.
    std::string halLibrary =
        std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/core/libcriu-amdgpu-hal.so";
    void* hal = dlopen(halLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(hal, nullptr) << halLibrary << ": " << dlerror();
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << lib << ": " << dlerror();
    auto entry =
        reinterpret_cast<CriuAmdgpuBackendEntryFn>(dlsym(h, CRIU_AMDGPU_BACKEND_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr);
    const CriuAmdgpuBackendDescriptor* desc = entry();
    EXPECT_EQ(desc->abiMajor, CRIU_AMDGPU_BACKEND_ABI_MAJOR);
    EXPECT_STREQ(desc->name, "amdgpu-drm");
    hal::HostServices host;
    hal::Backend* backend = desc->create(&host);
    ASSERT_NE(backend, nullptr);
    testsupport::TempDir empty;
    settings::Settings settings;
    settings.devRoot = empty.path();
    hal::ProbeAnswer answer = backend->probe(settings);
    EXPECT_FALSE(answer.present);
    EXPECT_FALSE(answer.reason.empty());
    desc->destroy(backend);
    dlclose(h);
    dlclose(hal);
}

} // namespace
