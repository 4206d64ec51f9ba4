// BOs shared between processes: dumped once, restored in two forked processes (as criu restores
// each task in a process of its own) that share the memory again through the share exchange.
#include "drm_fixture.h"
#include "fork_fdstore.h"

#include "coordination/share_exchange.h"
#include "formats/render_node_image.h"

#include <gmock/gmock.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

namespace fakedrm {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

constexpr uint64_t kGtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t kVram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr int kPidA = 100;
constexpr int kPidB = 200;
constexpr uint64_t kSharedSize = 128 << 10;

/// Process A exports a GTT BO on renderD128; process B, on renderD129, imports it (and has a
/// BO of its own); both map it. Dumped as criu 4.0+ dumps a tree: every process paused and
/// checkpointed, then A's file (id 1), then B's (id 2).
/// With `freedNumbersInB`, B's application had freed numbers before the import: B holds own
/// (1), the import (2, a number freed), a BO of its own (4) and a free number (3).
struct TwoProcesses {
    explicit TwoProcesses(bool freedNumbersInB = false) {
        for (FakeMachine* m : {&src, &dst}) {
            m->addGpu(gpuAt(128), "0000:03:00.0");
            m->addGpu(gpuAt(129), "0000:43:00.0");
        }
        a = src.open(kPidA, 5, 128);
        b = src.open(kPidB, 7, 129);
        exported = src.createBo(a, kSharedSize, kGtt, 0, 9);
        own = src.createBo(b, 64 << 10, kVram, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 10);
        if (freedNumbersInB) {
            for (uint8_t seed = 11; seed <= 13; ++seed)
                src.createBo(b, 8192, kGtt, 0, seed);
            for (uint32_t h : {2u, 3u})
                EXPECT_EQ(0, src.closeBo(b, h));
        }
        imported = src.share(a, exported, b);
        EXPECT_EQ(0, src.mapBo(a, exported, 0x400000000ull, 0, kSharedSize));
        EXPECT_EQ(0, src.mapBo(b, imported, 0x500000000ull, 0, kSharedSize));
        EXPECT_EQ(0, src.mapBo(b, own, 0x600000000ull, 0, 64 << 10));
    }
    /// Dumps the tree; `dmabufOfB`: B also holds a dma-buf fd of its import (file id 3).
    base::Result<void> dump(bool dmabufOfB = false) {
        drm::DrmDevice dev(src.env(images.store.get()), src.kernel, src.paths);
        for (int pid : {kPidA, kPidB}) {
            HAL_TRY_ASSIGN(bool had, dev.pauseProcess(pid));
            EXPECT_TRUE(had);
        }
        for (int pid : {kPidA, kPidB})
            HAL_TRY(dev.checkpointProcess(pid));
        for (auto [file, id] : {std::pair{a, 1u}, std::pair{b, 2u}}) {
            hal::FileRef ref = src.criuFile(file, id);
            auto dumped = dev.dumpFile(ref);
            src.kernel->close(ref.fd);
            HAL_TRY(std::move(dumped));
        }
        if (dmabufOfB) {
            hal::FileRef ref = src.criuDmabufFile(b, imported, 3);
            auto mine = dev.claimFile(ref);
            EXPECT_TRUE(mine.ok() && mine.value());
            auto dumped = dev.dumpFile(ref);
            src.kernel->close(ref.fd);
            HAL_TRY(std::move(dumped));
        }
        return dev.finishDump(true);
    }
    /// The index of BO `handle` in the render-node image of file `id`.
    size_t indexIn(uint32_t id, uint32_t handle) {
        auto image = formats::readRenderNodeImage(*images.store, id);
        EXPECT_TRUE(image.ok());
        for (size_t i = 0; image.ok() && i < image->bos.size(); ++i)
            if (image->bos[i].handle == handle)
                return i;
        return ~size_t{0};
    }
    FakeMachine src, dst;
    Images images;
    AppFile a, b;
    uint32_t exported = 0, own = 0, imported = 0;
};

/// Runs `body` in a forked child, which exits 0 when it returns "" and prints what it returned
/// otherwise; bounded by an alarm.
pid_t forkTask(const std::function<std::string()>& body) {
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        std::string failure = body();
        if (!failure.empty())
            fprintf(stderr, "%s\n", failure.c_str());
        fflush(stderr);
        _exit(failure.empty() ? 0 : 1);
    }
    return pid;
}

int exitStatusOf(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// criu's fdstore across forks, and the share exchange of the restored tasks over it.
struct TaskExchange {
    TaskExchange() : exchange(coordination::makeTaskShareExchange(fdstore.store())) {
        EXPECT_TRUE(exchange.ok()) << exchange.error().describe();
    }
    /// A device of `m` restoring from `images` that shares memory through the exchange.
    std::unique_ptr<drm::DrmDevice> device(FakeMachine& m, Images& images) {
        auto dev = makeDevice(m, images);
        dev->setShareExchange(exchange->get());
        return dev;
    }
    /// In a restored task: the fd of file `id` restored by `dev`, or none, `why` saying
    /// "WHO: error".
    static std::optional<int> restore(drm::DrmDevice& dev, uint32_t id, const char* who,
                                      std::string* why) {
        auto fd = dev.restoreFile(id);
        if (fd.ok())
            return fd.value();
        *why = std::string(who) + ": " + fd.error().describe();
        return std::nullopt;
    }
    testsupport::ForkSharedFdStore fdstore;
    base::Result<std::unique_ptr<coordination::ShareExchange>> exchange;
};

TEST(DrmCrossProcess, TheSharedMemoryIsDumpedOnceByItsOwnerAndTheFollowerNamesTheOwnersImage) {
    TwoProcesses t;
    auto dumped = t.dump();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();

    auto imageB = formats::readRenderNodeImage(*t.images.store, 2);
    ASSERT_TRUE(imageB.ok()) << imageB.error().describe();
    size_t follower = t.indexIn(2, t.imported);
    ASSERT_LT(follower, imageB->bos.size());
    const auto& sharing = imageB->bos[follower].sharing;
    ASSERT_TRUE(sharing.has_value());
    EXPECT_TRUE(sharing->follower);
    EXPECT_EQ(sharing->ownerFile, 1u);
    auto imageA = formats::readRenderNodeImage(*t.images.store, 1);
    ASSERT_TRUE(imageA.ok());
    size_t owner = t.indexIn(1, t.exported);
    ASSERT_LT(owner, imageA->bos.size());
    ASSERT_TRUE(imageA->bos[owner].sharing.has_value());
    EXPECT_FALSE(imageA->bos[owner].sharing->follower);
    EXPECT_EQ(imageA->bos[owner].sharing->key, sharing->key) << "one key across the processes";
    // The contents once: the owner's file holds them, the follower has none.
    std::filesystem::path dir = t.images.dir.path();
    EXPECT_EQ(std::filesystem::file_size(
                  dir / formats::drmPagesImageName(1, 128, static_cast<uint32_t>(owner))),
              8 + kSharedSize);
    EXPECT_FALSE(std::filesystem::exists(
        dir / formats::drmPagesImageName(2, 129, static_cast<uint32_t>(follower))));
    EXPECT_TRUE(std::filesystem::exists(
        dir / formats::drmPagesImageName(2, 129, static_cast<uint32_t>(t.indexIn(2, t.own)))));
}

/// Restores A and B of `t` in two forked tasks (A late): B's import waits for A's memory, holds
/// the dumped bytes and B's handles are `handlesOfB`, without GEM_CHANGE_HANDLE; a write by B
/// through its import is read by A.
void restoreInTwoTasksAndShareAWrite(TwoProcesses& t, const std::vector<uint32_t>& handlesOfB) {
    auto dumped = t.dump();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    std::vector<std::byte> original = t.src.contents(t.a.fd, t.exported);
    TaskExchange exchange;
    ASSERT_TRUE(exchange.fdstore.ok());
    ASSERT_TRUE(exchange.exchange.ok());
    int written[2], done[2];
    ASSERT_EQ(pipe(written), 0);
    ASSERT_EQ(pipe(done), 0);
    std::vector<std::byte> update = pattern(kSharedSize, 77);

    // Task A: restores its file late (B asks first), then reads what B wrote through its BO.
    pid_t taskA = forkTask([&]() -> std::string {
        close(written[1]);
        close(done[0]);
        std::this_thread::sleep_for(300ms);
        auto dev = exchange.device(t.dst, t.images);
        std::string why;
        auto fd = TaskExchange::restore(*dev, 1, "A", &why);
        if (!fd)
            return why;
        char c = 0;
        if (read(written[0], &c, 1) != 1)
            return "A: B never wrote";
        bool same = t.dst.contents(fd.value(), t.exported) == update;
        (void)!write(done[1], "x", 1);
        return same ? "" : "A: B's write is not in A's BO";
    });
    // Task B: its import waits for A's memory, holds the dumped bytes, and B writes through it.
    pid_t taskB = forkTask([&]() -> std::string {
        close(written[0]);
        close(done[1]);
        auto dev = exchange.device(t.dst, t.images);
        std::string why;
        auto fd = TaskExchange::restore(*dev, 2, "B", &why);
        if (!fd)
            return why;
        auto file = t.dst.kernel->fileOf(fd.value());
        if (!file->handles.count(t.imported) || !file->handles.at(t.imported)->imported)
            return "B: the shared BO is not an import of handle " + std::to_string(t.imported);
        std::vector<uint32_t> handles;
        for (const auto& [h, bo] : file->handles)
            handles.push_back(h);
        if (handles != handlesOfB)
            return "B: its handles are not the checkpointed ones";
        if (t.dst.kernel->ioctlCounts[drm::kIoctlGemChangeHandle] != 0)
            return "B: GEM_CHANGE_HANDLE was called";
        if (t.dst.contents(fd.value(), t.imported) != original)
            return "B: the import does not hold the dumped contents";
        if (t.dst.contents(fd.value(), t.own) != t.src.contents(t.b.fd, t.own))
            return "B: its own BO lost its contents";
        auto resumed = dev->resumeProcess(kPidB);
        if (!resumed.ok())
            return "B: " + resumed.error().describe();
        memcpy(file->handles.at(t.imported)->bytes(), update.data(), update.size());
        (void)!write(written[1], "x", 1);
        char c = 0;
        return read(done[0], &c, 1) == 1 ? "" : "B: A never read"; // A's fd stays until then
    });
    ASSERT_GT(taskA, 0);
    ASSERT_GT(taskB, 0);
    for (int fd : {written[0], written[1], done[0], done[1]})
        close(fd);
    EXPECT_EQ(exitStatusOf(taskB), 0);
    EXPECT_EQ(exitStatusOf(taskA), 0);
}

TEST(DrmCrossProcess, RestoredInTwoProcessesTheImporterWaitsForTheOwnerAndWritesReachIt) {
    TwoProcesses t;
    restoreInTwoTasksAndShareAWrite(t, {t.own, t.imported});
}

TEST(DrmCrossProcess, AnImportIntoANumberItsApplicationHadFreedKeepsItAndStaysShared) {
    TwoProcesses t(true);
    ASSERT_EQ(t.imported, 2u);
    restoreInTwoTasksAndShareAWrite(t, {1, 2, 4});
}

TEST(DrmCrossProcess, SharedBothWaysTheTwoRestoresDoNotWaitForEachOtherAndStayShared) {
    TwoProcesses t;
    // And B's own BO imported by A: the first process written (A) owns both memories.
    uint32_t back = t.src.share(t.b, t.own, t.a);
    auto dumped = t.dump();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto imageB = formats::readRenderNodeImage(*t.images.store, 2);
    ASSERT_TRUE(imageB.ok());
    const auto& ownSharing = imageB->bos[t.indexIn(2, t.own)].sharing;
    ASSERT_TRUE(ownSharing && ownSharing->follower);
    EXPECT_EQ(ownSharing->ownerFile, 1u);
    std::vector<std::byte> ownBytes = t.src.contents(t.b.fd, t.own);
    TaskExchange exchange;
    ASSERT_TRUE(exchange.exchange.ok());
    int written[2], checked[2];
    ASSERT_EQ(pipe(written), 0);
    ASSERT_EQ(pipe(checked), 0);
    std::vector<std::byte> update = pattern(64 << 10, 55);

    pid_t taskA = forkTask([&]() -> std::string {
        close(written[1]);
        close(checked[0]);
        auto dev = exchange.device(t.dst, t.images);
        std::string why;
        auto fd = TaskExchange::restore(*dev, 1, "A", &why);
        if (!fd)
            return why;
        bool restored = t.dst.contents(fd.value(), back) == ownBytes;
        (void)!write(checked[1], "x", 1); // B may write now
        if (!restored)
            return "A: its import of B's BO does not hold B's contents";
        char c = 0;
        if (read(written[0], &c, 1) != 1)
            return "A: B never wrote";
        return t.dst.contents(fd.value(), back) == update ? "" : "A: B's write is not in A's BO";
    });
    pid_t taskB = forkTask([&]() -> std::string {
        close(written[0]);
        close(checked[1]);
        auto dev = exchange.device(t.dst, t.images);
        std::string why;
        auto fd = TaskExchange::restore(*dev, 2, "B", &why);
        if (!fd)
            return why;
        auto file = t.dst.kernel->fileOf(fd.value());
        if (t.dst.contents(fd.value(), t.own) != ownBytes)
            return "B: its BO lost its contents";
        char c = 0;
        if (read(checked[0], &c, 1) != 1)
            return "B: A never checked";
        memcpy(file->handles.at(t.own)->bytes(), update.data(), update.size());
        (void)!write(written[1], "x", 1);
        return "";
    });
    ASSERT_GT(taskA, 0);
    ASSERT_GT(taskB, 0);
    for (int fd : {written[0], written[1], checked[0], checked[1]})
        close(fd);
    EXPECT_EQ(exitStatusOf(taskA), 0);
    EXPECT_EQ(exitStatusOf(taskB), 0);
}

TEST(DrmCrossProcess, ADmabufFdTheImporterHoldsIsRecreatedFromItsImportOfTheOwnersMemory) {
    TwoProcesses t;
    auto dumped = t.dump(true);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    TaskExchange exchange;
    ASSERT_TRUE(exchange.exchange.ok());
    int done[2];
    ASSERT_EQ(pipe(done), 0);

    pid_t taskA = forkTask([&]() -> std::string {
        close(done[1]);
        auto dev = exchange.device(t.dst, t.images);
        auto fd = dev->restoreFile(1);
        char c = 0;
        (void)!read(done[0], &c, 1); // B fetches A's fd from A: A stays until B is done
        return fd.ok() ? "" : "A: " + fd.error().describe();
    });
    pid_t taskB = forkTask([&]() -> std::string {
        close(done[0]);
        auto dev = exchange.device(t.dst, t.images);
        std::string why;
        auto render = TaskExchange::restore(*dev, 2, "B", &why);
        if (!render)
            return why;
        auto dmabuf = dev->restoreFile(3);
        if (!dmabuf.ok())
            return "B: " + dmabuf.error().describe();
        struct stat st {};
        if (t.dst.kernel->fstat(dmabuf.value(), &st) != 0)
            return "B: the restored dma-buf is not a dma-buf";
        auto import = t.dst.kernel->fileOf(render.value())->handles.at(t.imported);
        return st.st_ino == import->dmabufInode ? "" : "B: the dma-buf is not of B's import";
    });
    ASSERT_GT(taskA, 0);
    ASSERT_GT(taskB, 0);
    close(done[0]);
    EXPECT_EQ(exitStatusOf(taskB), 0);
    close(done[1]);
    EXPECT_EQ(exitStatusOf(taskA), 0);
}

TEST(DrmCrossProcess, WithoutAnExchangeBetweenProcessesTheFollowerSaysWhichBoCannotBeShared) {
    TwoProcesses t;
    auto dumped = t.dump();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto dev = makeDevice(t.dst, t.images); // the host set no exchange: this process's only

    auto fd = dev->restoreFile(2);

    ASSERT_FALSE(fd.ok());
    EXPECT_EQ(fd.error().code(), base::ErrorCode::NotSupported);
    EXPECT_THAT(fd.error().describe(),
                HasSubstr(base::strFormat("handle %u) of amdgpu-renderD-2.img", t.imported)));
    EXPECT_THAT(fd.error().describe(), HasSubstr("fdstore"));
    EXPECT_TRUE(dev->finishRestore(false).ok());
}

TEST(DrmCrossProcess, AFollowerWhoseOwnersImageIsMissingFailsAtOnceNamingIt) {
    TwoProcesses t;
    auto dumped = t.dump();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    std::filesystem::remove(t.images.dir / formats::renderNodeImageName(1));
    TaskExchange exchange;
    ASSERT_TRUE(exchange.exchange.ok());
    auto dev = exchange.device(t.dst, t.images);
    auto t0 = std::chrono::steady_clock::now();

    auto fd = dev->restoreFile(2);

    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "it must not wait for the owner";
    ASSERT_FALSE(fd.ok());
    EXPECT_EQ(fd.error().code(), base::ErrorCode::Image);
    EXPECT_THAT(fd.error().describe(), HasSubstr("amdgpu-renderD-1.img"));
    EXPECT_THAT(fd.error().describe(), HasSubstr("amdgpu-renderD-2.img"));
    EXPECT_TRUE(dev->finishRestore(false).ok());
}

TEST(DrmCrossProcess,
     AFollowerWhoseOwnerIsALaterFileOfItsOwnProcessWaitsForThatFileNotTheExchange) {
    FakeMachine src, dst;
    for (FakeMachine* m : {&src, &dst}) {
        m->addGpu(gpuAt(128), "0000:03:00.0");
        m->addGpu(gpuAt(129), "0000:43:00.0");
    }
    AppFile imp = src.open(kPidA, 5, 129); // the importer's fd is the lower: restored first
    AppFile exp = src.open(kPidA, 6, 128);
    uint32_t shared = src.createBo(exp, 64 << 10, kGtt, 0, 3);
    uint32_t imported = src.share(exp, shared, imp);
    Images images;
    auto dumped = dump(src, images, kPidA, {{imp, 1}, {exp, 2}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    ASSERT_TRUE(image->bos[0].sharing && image->bos[0].sharing->follower);
    EXPECT_EQ(image->bos[0].sharing->ownerFile, 0u) << "the owner is of the same process";
    TaskExchange exchange;
    ASSERT_TRUE(exchange.exchange.ok());
    auto dev = exchange.device(dst, images);
    auto t0 = std::chrono::steady_clock::now();

    auto first = dev->restoreFile(1);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    auto second = dev->restoreFile(2);

    ASSERT_TRUE(first.ok()) << first.error().describe();
    ASSERT_TRUE(second.ok()) << second.error().describe();
    auto restoredImport = dst.kernel->fileOf(first.value())->handles.at(imported);
    EXPECT_EQ(restoredImport->bytes(),
              dst.kernel->fileOf(second.value())->handles.at(shared)->bytes())
        << "one memory";
    EXPECT_TRUE(dst.contents(first.value(), imported) == src.contents(exp.fd, shared));
    EXPECT_TRUE(dev->resumeProcess(kPidA).value());
}

} // namespace
} // namespace fakedrm
