#include "criu_steps.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace thunkfake {

namespace {
constexpr uint32_t kFirstFileId = 20;
} // namespace

std::vector<kfd::ProcFd> deviceFilesInDumpOrder(fakekfd::FakeKernel& k, int pid) {
    std::vector<kfd::ProcFd> fds;
    EXPECT_EQ(0, k.listProcessFds(pid, &fds));
    std::stable_sort(fds.begin(), fds.end(), [](const kfd::ProcFd& a, const kfd::ProcFd& b) {
        return (major(a.st.st_rdev) != kfd::kDrmMajor) > (major(b.st.st_rdev) != kfd::kDrmMajor);
    });
    return fds;
}

void mapAgain(const FakeMapping& v, int fd, uint64_t pgoff) {
    void* at = ::mmap(reinterpret_cast<void*>(v.addr), v.len, v.prot, v.flags | MAP_FIXED, fd,
                      static_cast<off_t>(pgoff));
    EXPECT_EQ(at, reinterpret_cast<void*>(v.addr))
        << v.path << " at " << std::hex << v.addr << ": " << strerror(errno);
}

void dumpThisProcess(fakekfd::TestMachine& m, formats::ImageStore& store, DumpedTask* out) {
    int pid = getpid();
    fakekfd::FakeKernel& k = *m.kernel;
    std::vector<kfd::ProcFd> fds = deviceFilesInDumpOrder(k, pid);
    out->vmas = mappings();
    k.seize(pid);
    auto dev = m.device(&store);
    auto paused = dev->pauseProcess(pid);
    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    ASSERT_TRUE(paused.value());
    auto ck = dev->checkpointProcess(pid);
    ASSERT_TRUE(ck.ok()) << ck.error().describe();
    uint32_t id = kFirstFileId;
    for (const kfd::ProcFd& fd : fds) {
        hal::FileRef ref = m.fileRef(pid, fd.fd, id);
        auto claimed = dev->claimFile(ref);
        ASSERT_TRUE(claimed.ok() && claimed.value()) << ref.path;
        auto dumped = dev->dumpFile(ref);
        ASSERT_TRUE(dumped.ok()) << ref.path << ": " << dumped.error().describe();
        k.close(ref.fd);
        out->fdOfId[id++] = fd.fd;
    }
    auto fin = dev->finishDump(true);
    ASSERT_TRUE(fin.ok()) << fin.error().describe();
    k.release(pid);
    EXPECT_EQ(dev->phaseOf(pid), hal::DumpPhase::Unpaused);
}

void dropDeviceVmas(const DumpedTask& task) {
    for (const FakeMapping& v : task.vmas)
        ASSERT_NE(MAP_FAILED,
                  ::mmap(reinterpret_cast<void*>(v.addr), v.len, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0));
    forgetMappings();
}

void restoreThisProcess(fakekfd::TestMachine& m, formats::ImageStore& store,
                        const DumpedTask& task) {
    int pid = getpid();
    fakekfd::FakeKernel& k = *m.kernel;
    auto dev = m.device(&store);
    for (const auto& [id, oldFd] : task.fdOfId) {
        auto owns = dev->ownsImage(id);
        ASSERT_TRUE(owns.ok() && owns.value()) << "file id " << id;
        auto fd = dev->restoreFile(id);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
        ASSERT_EQ(0, k.taskMoveFd(fd.value(), oldFd)) << "fd " << oldFd << " taken";
    }
    for (const FakeMapping& v : task.vmas) {
        hal::VmaQuery q;
        q.path = v.path;
        q.addr = v.addr;
        q.oldPgoff = v.offset;
        auto answer = dev->updateVmaMap(q);
        ASSERT_TRUE(answer.ok()) << answer.error().describe();
        ASSERT_TRUE(answer.value().has_value())
            << "the backend does not know the VMA at " << std::hex << v.addr << " of " << v.path;
        mapAgain(v, answer.value()->fd >= 0 ? answer.value()->fd : v.fd, answer.value()->newPgoff);
        if (answer.value()->fd >= 0)
            k.close(answer.value()->fd);
    }
    auto resumed = dev->resumeProcess(pid);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
    EXPECT_TRUE(resumed.value());
    auto fin = dev->finishRestore(true);
    EXPECT_TRUE(fin.ok()) << fin.error().describe();
}

} // namespace thunkfake
