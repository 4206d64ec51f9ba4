// GPU memory shared between contexts and processes, as a driver shares it: a BO exported as a
// dma-buf fd, handed on (SCM_RIGHTS, pidfd_getfd), imported; one memory, freed with its last
// holder; and contexts of processes that are gone reaped as a kernel reaps them.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/machine.h"
#include "mockgpu/reaper.h"

#include "coordination/fd_message.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace {

using mocktest::contextCount;
using mocktest::errorText;
using mocktest::Fd;
using mocktest::MockMachine;
using mocktest::pattern;
using mocktest::readAll;
using testing::HasSubstr;

constexpr uint64_t kSize = 64 * 1024;

TEST(MockSharing, GivenExportedBo_WhenImportedInAContextOfAnotherGpu_ThenWritesAreSeenBothWays) {
    MockMachine m(2);
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 1));
    Fd gb{b};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));

    ASSERT_OK_ASSIGN(uint32_t imported, mock::importBo(b, dmabuf, 0x700000));
    close(dmabuf);

    ASSERT_OK(mock::writeBo(a, bo, 0, pattern(kSize, 3)));
    EXPECT_EQ(readAll(b, imported, kSize), pattern(kSize, 3));
    ASSERT_OK(mock::writeBo(b, imported, 0, pattern(kSize, 4)));
    EXPECT_EQ(readAll(a, bo, kSize), pattern(kSize, 4));
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(b));
    const mock::BufferObject* rec = s.findBo(imported);
    ASSERT_NE(rec, nullptr);
    EXPECT_TRUE(rec->imported);
    EXPECT_EQ(rec->size, kSize);
    EXPECT_EQ(rec->flags, 1u);
    EXPECT_EQ(rec->gpuVa, 0x700000u);
}

TEST(MockSharing, GivenImport_WhenTheExporterCloses_ThenTheMemoryLivesOnWithTheImporter) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int b, mock::openDevice(m.root(), 0));
    Fd gb{b};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    ASSERT_OK(mock::writeBo(a, bo, 0, pattern(kSize, 9)));
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));
    ASSERT_OK_ASSIGN(uint32_t imported, mock::importBo(b, dmabuf, 0x100000));
    close(dmabuf);

    ASSERT_OK(mock::closeDevice(a));

    EXPECT_EQ(readAll(b, imported, kSize), pattern(kSize, 9));
}

/// Two contexts on GPU 0 of `m`: BO 1 of the first at 0x100000, imported by the second at
/// `importVa`; the fds stay open until the end of the test.
struct SharedPair {
    Fd a, b, dmabuf;
};
void shareOneBo(const MockMachine& m, uint64_t importVa, SharedPair* out) {
    ASSERT_OK_ASSIGN(out->a.fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(out->b.fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(out->a.fd, kSize, 1, 0x100000));
    ASSERT_OK_ASSIGN(out->dmabuf.fd, mock::exportBo(out->a.fd, bo));
    ASSERT_OK(mock::importBo(out->b.fd, out->dmabuf.fd, importVa));
}

TEST(MockSharing, GivenImport_WhenCountingTheGpusMemory_ThenTheSharedMemoryCountsOnce) {
    MockMachine m;
    SharedPair shared;
    ASSERT_NO_FATAL_FAILURE(shareOneBo(m, 0x100000, &shared));

    ASSERT_OK_ASSIGN(uint64_t used, mock::gpuMemoryInUse(m.root(), m.gpuId(0)));

    EXPECT_EQ(used, kSize);
}

TEST(MockSharing, GivenAnFdThatIsNoBo_WhenImport_ThenItSaysSo) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    Fd other{open("/dev/null", O_RDONLY | O_CLOEXEC)};
    std::string path = m.dir() / "plain";
    Fd plain{open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};

    auto fromNull = mock::importBo(a, other.fd, 0x100000);
    auto fromFile = mock::importBo(a, plain.fd, 0x100000);

    EXPECT_THAT(errorText(fromNull), HasSubstr("is not a dma-buf of a mock GPU BO"));
    EXPECT_THAT(errorText(fromFile), HasSubstr("is not a dma-buf of a BO of mock machine"));
}

TEST(MockSharing, GivenImportOverlappingABo_WhenImport_ThenTheVaIsRefused) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));
    Fd gd{dmabuf};

    auto overlapping = mock::importBo(a, dmabuf, 0x100000 + kSize / 2);

    EXPECT_THAT(errorText(overlapping), HasSubstr("overlaps buffer object"));
}

/// Runs `body` in a child process; its exit status.
int inChild(const std::function<int()>& body) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(body());
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

TEST(MockSharing,
     GivenBoSentToAnotherProcessOverAUnixSocket_WhenItImportsAndWrites_ThenTheExporterReadsIt) {
    MockMachine m(2);
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    Fd s0{pair[0]}, s1{pair[1]};
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));
    ASSERT_OK(coordination::sendFdMessage(pair[0], "x", 1, std::span(&dmabuf, 1), "a BO"));
    close(dmabuf);

    int status = inChild([&] {
        auto m2 = coordination::receiveFdMessage(pair[1], 1, "a BO");
        if (!m2.ok() || m2->fds.size() != 1)
            return 2;
        auto b = mock::openDevice(m.root(), 1);
        if (!b.ok())
            return 3;
        auto imported = mock::importBo(*b, m2->fds[0], 0x100000);
        close(m2->fds[0]);
        if (!imported.ok())
            return 4;
        return mock::writeBo(*b, *imported, 0, pattern(kSize, 7)).ok() ? 0 : 5;
    });

    EXPECT_EQ(status, 0);
    EXPECT_EQ(readAll(a, bo, kSize), pattern(kSize, 7));
}

TEST(MockSharing, GivenBoTakenWithPidfdGetfd_WhenImported_ThenItIsTheSameMemory) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    ASSERT_OK(mock::writeBo(a, bo, 0, pattern(kSize, 5)));
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));
    Fd gd{dmabuf};
    pid_t parent = getpid();

    int status = inChild([&] {
        int pidfd = static_cast<int>(syscall(SYS_pidfd_open, parent, 0));
        int fd = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, dmabuf, 0));
        if (fd < 0)
            return 2;
        auto b = mock::openDevice(m.root(), 0);
        auto imported =
            b.ok() ? mock::importBo(*b, fd, 0x100000) : base::Result<uint32_t>(b.error());
        if (!imported.ok())
            return 3;
        std::vector<std::byte> bytes(kSize);
        if (!mock::readBo(*b, *imported, 0, bytes).ok())
            return 4;
        return bytes == pattern(kSize, 5) ? 0 : 5;
    });

    EXPECT_EQ(status, 0);
}

/// The reaper sees every holder only from the initial pid namespace; elsewhere it reaps nothing.
class MockReaper : public testing::Test {
protected:
    void SetUp() override {
        if (!mock::seesEveryProcess())
            GTEST_SKIP() << "outside the initial pid namespace nothing is reaped";
    }
};

TEST_F(MockReaper,
       GivenAProcessThatExitedWithoutClosingItsDevice_WhenReaping_ThenItsContextIsGone) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int mine, mock::openDevice(m.root(), 0));
    Fd gm{mine};
    int status = inChild([&] {
        auto fd = mock::openDevice(m.root(), 0);
        return fd.ok() && mock::allocBo(*fd, kSize, 1, 0x100000).ok() ? 0 : 2;
    });
    ASSERT_EQ(status, 0);
    ASSERT_EQ(contextCount(m.root()), 2u);

    ASSERT_OK_ASSIGN(size_t reaped, mock::reapOrphanedContexts(m.root()));

    EXPECT_EQ(reaped, 1u);
    EXPECT_EQ(contextCount(m.root()), 1u);
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(mine));
    EXPECT_EQ(s.ownerPid, mock::hostPid());
}

TEST_F(MockReaper, GivenADeadOwnerWhoseChildInheritedTheDevice_WhenReaping_ThenTheContextStays) {
    MockMachine m;
    int ready[2], done[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(done), 0);
    fflush(nullptr);
    pid_t owner = fork();
    ASSERT_GE(owner, 0);
    if (owner == 0) {
        close(done[1]); // the heir must see the end of `done` when the test closes it
        close(ready[0]);
        auto fd = mock::openDevice(m.root(), 0); // inheritable
        if (!fd.ok())
            _exit(2);
        if (fork() == 0) { // the heir keeps the fd until the test is done
            char c;
            (void)!write(ready[1], "r", 1);
            (void)!read(done[0], &c, 1);
            _exit(0);
        }
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    int status = 0;
    waitpid(owner, &status, 0);

    auto reaped = mock::reapOrphanedContexts(m.root());
    size_t left = contextCount(m.root());
    close(done[1]);
    close(ready[0]);

    ASSERT_TRUE(reaped.ok()) << reaped.error().describe();
    EXPECT_EQ(*reaped, 0u);
    EXPECT_EQ(left, 1u);
}

TEST_F(MockReaper, GivenADeadImporter_WhenReaping_ThenTheExportersMemoryStays) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int a, mock::openDevice(m.root(), 0));
    Fd ga{a};
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(a, kSize, 1, 0x100000));
    ASSERT_OK(mock::writeBo(a, bo, 0, pattern(kSize, 1)));
    ASSERT_OK_ASSIGN(int dmabuf, mock::exportBo(a, bo));
    Fd gd{dmabuf};
    int status = inChild([&] {
        auto b = mock::openDevice(m.root(), 0);
        return b.ok() && mock::importBo(*b, dmabuf, 0x100000).ok() ? 0 : 2;
    });
    ASSERT_EQ(status, 0);

    ASSERT_OK_ASSIGN(size_t reaped, mock::reapOrphanedContexts(m.root()));

    EXPECT_EQ(reaped, 1u);
    EXPECT_EQ(readAll(a, bo, kSize), pattern(kSize, 1));
    ASSERT_OK_ASSIGN(std::string status2, mock::describeMachine(m.root()));
    EXPECT_THAT(status2, testing::Not(HasSubstr("shared with")));
}

TEST_F(MockReaper, GivenAContextRestoredButNotResumed_WhenReaping_ThenItIsLeftToItsRestore) {
    MockMachine m;
    mock::ContextState snapshot;
    snapshot.gpuId = snapshot.userGpuId = m.gpuId(0);
    snapshot.bos.push_back(mock::BufferObject{1, kSize, 0x100000, 1});
    // The restoring criu is this process, alive.
    ASSERT_OK(mock::criuRestore(m.root(), snapshot, m.gpuId(0), 128, 1,
                                mock::restoreSessionOf(getpid(), 42)));

    ASSERT_OK_ASSIGN(size_t reaped, mock::reapOrphanedContexts(m.root()));

    EXPECT_EQ(reaped, 0u);
    EXPECT_EQ(contextCount(m.root()), 1u);
}

TEST_F(MockReaper, GivenARestoreWhoseCriuDied_WhenReaping_ThenWhatNoProcessHoldsIsFreed) {
    MockMachine m;
    mock::ContextState snapshot;
    snapshot.gpuId = snapshot.userGpuId = m.gpuId(0);
    snapshot.bos.push_back(mock::BufferObject{1, kSize, 0x100000, 1});
    pid_t criu = fork(); // a criu that is gone by the time the reaper looks
    if (criu == 0)
        _exit(0);
    ASSERT_EQ(waitpid(criu, nullptr, 0), criu);
    ASSERT_OK(mock::criuRestore(m.root(), snapshot, m.gpuId(0), 128, 1,
                                mock::restoreSessionOf(criu, 42)));

    ASSERT_OK_ASSIGN(size_t reaped, mock::reapOrphanedContexts(m.root()));

    EXPECT_EQ(reaped, 1u);
    EXPECT_EQ(contextCount(m.root()), 0u);
}

TEST(MockSharing, GivenSharedBos_WhenDescribingTheMachine_ThenEachSaysWhatItSharesWith) {
    MockMachine m;
    SharedPair shared;
    ASSERT_NO_FATAL_FAILURE(shareOneBo(m, 0x200000, &shared));

    ASSERT_OK_ASSIGN(std::string text, mock::describeMachine(m.root()));

    EXPECT_THAT(text,
                HasSubstr("bo 1  size 65536  va 0x100000  flags 0x1  shared with context 2 bo 1"));
    EXPECT_THAT(
        text,
        HasSubstr(
            "bo 1  size 65536  va 0x200000  flags 0x1  imported  shared with context 1 bo 1"));
}

} // namespace
