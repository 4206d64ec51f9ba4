// The call gate (call_gate.h): a checkpoint holds a process's driver calls before criu freezes it,
// waits for the calls in progress, and a held process waits holding no file of the driver; a
// process frozen inside a call by something else is named; pid namespaces are matched.

#include "mock_fixture.h"

#include "mockgpu/call_gate.h"
#include "mockgpu/client.h"
#include "mockgpu/context.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/held_gates.h"
#include "mockgpu/machine.h"

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace {

using mocktest::errorText;
using mocktest::MockMachine;
using testing::HasSubstr;
using namespace std::chrono_literals;

/// The targets of this process's (or `pid`'s) fds that lie under `root`.
std::vector<std::string> filesUnder(const std::string& root, pid_t pid = 0) {
    std::string dir = pid ? "/proc/" + std::to_string(pid) + "/fd" : "/proc/self/fd";
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
        if (!ec && target.compare(0, root.size() + 1, root + "/") == 0)
            out.push_back(target);
    }
    return out;
}

/// Whether `fd` becomes readable within `ms` milliseconds.
bool readableWithin(int fd, int ms) {
    struct pollfd p {
        fd, POLLIN, 0
    };
    return poll(&p, 1, ms) == 1;
}

/// A child process that enters a driver call named `what` at the gate of `root` and is then
/// stopped (SIGSTOP from this process: the first process of a pid namespace ignores its own), as a
/// task frozen inside a call by something other than a checkpoint's pause. With `newPidNamespace`
/// it is the first process of a pid namespace of its own.
class ChildStoppedInCall {
public:
    ChildStoppedInCall(const std::string& root, const std::string& what, bool newPidNamespace) {
        if (newPidNamespace && unshare(CLONE_NEWPID) != 0) {
            ADD_FAILURE() << "unshare(CLONE_NEWPID): " << strerror(errno) << " (needs root)";
            return;
        }
        int entered[2];
        if (pipe(entered) != 0)
            return;
        pid_ = fork();
        if (pid_ == 0) {
            close(entered[0]);
            mock::GateCall call;
            char ok = call.enter(root, what).ok() ? 'y' : 'n';
            if (write(entered[1], &ok, 1) != 1 || ok != 'y')
                _exit(1);
            for (;;)
                pause();
        }
        close(entered[1]);
        char ok = 0;
        int status = 0;
        if (pid_ > 0 && read(entered[0], &ok, 1) == 1 && ok == 'y' && kill(pid_, SIGSTOP) == 0 &&
            waitpid(pid_, &status, WUNTRACED) == pid_ && WIFSTOPPED(status))
            stopped_ = true;
        close(entered[0]);
    }
    ~ChildStoppedInCall() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    pid_t pid() const { return pid_; }
    bool stopped() const { return stopped_; }

private:
    pid_t pid_ = -1;
    bool stopped_ = false;
};

TEST(MockCallGate, GivenNoCallInProgress_WhenHoldCalls_ThenHeldAtOnceUntilReleased) {
    MockMachine m;
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));
    EXPECT_TRUE(held.waitedFor.empty());
    EXPECT_TRUE(mock::callsHeld(m.root(), held.key));

    ASSERT_OK(mock::releaseCalls(m.root(), held.key));

    EXPECT_FALSE(mock::callsHeld(m.root(), held.key));
    ASSERT_OK(mock::releaseCalls(m.root(), held.key)); // open already: fine
}

// The first calls on a machine make the gate folder; callers that start together (a parent and
// its child) race to make it, and the one whose mkdir finds it made must not fail (seen in e2e:
// "cannot announce a call ... (File exists)").
TEST(MockCallGate, GivenNoGateFolder_WhenManyThreadsAnnounceAtOnce_ThenEveryCallEnters) {
    MockMachine m;
    for (int round = 0; round < 40; ++round) {
        std::filesystem::remove_all(m.root() + "/state/gate");
        constexpr int kThreads = 6;
        std::atomic<int> ready{0}, failed{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        std::vector<std::string> errors(kThreads);
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                ready.fetch_add(1);
                while (!go.load())
                    std::this_thread::yield();
                mock::GateCall call;
                auto r = call.enter(m.root(), "first call");
                if (!r.ok()) {
                    errors[t] = r.error().describe();
                    failed.fetch_add(1);
                }
            });
        while (ready.load() < kThreads)
            std::this_thread::yield();
        go.store(true);
        for (std::thread& th : threads)
            th.join();
        ASSERT_EQ(failed.load(), 0) << "round " << round << ": " << testing::PrintToString(errors);
    }
}

TEST(MockCallGate, GivenThisProcess_WhenTaskKeyOf_ThenItsPidNamespaceAndPid) {
    ASSERT_OK_ASSIGN(mock::TaskKey key, mock::taskKeyOf(getpid()));
    std::string ns = std::filesystem::read_symlink("/proc/self/ns/pid").string();
    EXPECT_EQ("pid:[" + std::to_string(key.pidNamespace) + "]", ns);
    EXPECT_EQ(key.pid, getpid());
}

TEST(MockCallGate, GivenNoSuchProcess_WhenHoldCalls_ThenNotFoundNamingIt) {
    MockMachine m;
    auto held = mock::holdCalls(m.root(), 0x3fffffff, 1000);
    EXPECT_EQ(mocktest::errorCode(held), base::ErrorCode::NotFound);
    EXPECT_THAT(errorText(held), HasSubstr("process 1073741823"));
}

TEST(MockCallGate, GivenACallInProgress_WhenHoldCalls_ThenItWaitsForTheCallToEnd) {
    MockMachine m;
    auto call = std::make_unique<mock::GateCall>();
    ASSERT_OK(call->enter(m.root(), "submit on context 7"));

    auto held =
        std::async(std::launch::async, [&] { return mock::holdCalls(m.root(), getpid(), 10000); });
    EXPECT_EQ(held.wait_for(200ms), std::future_status::timeout)
        << "the hold did not wait for the call in progress";
    call.reset(); // the call ends

    ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
    auto result = held.get();
    ASSERT_TRUE(result.ok()) << result.error().describe();
    ASSERT_EQ(result->waitedFor.size(), 1u);
    EXPECT_THAT(result->waitedFor[0], HasSubstr("submit on context 7"));
    ASSERT_OK(mock::releaseCalls(m.root(), result->key));
}

TEST(MockCallGate,
     GivenHeldProcess_WhenAThreadSubmits_ThenItWaitsHoldingNoDriverFileUntilReleased) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(uint32_t queue, mock::createQueue(fd));
    ASSERT_OK_ASSIGN(uint32_t event, mock::createEvent(fd));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(fd, 4096, 1, 0x1000));
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));
    std::vector<std::string> onlyTheNode = filesUnder(m.root());
    ASSERT_EQ(onlyTheNode.size(), 1u);

    auto submitted = std::async(std::launch::async, [&] {
        return mock::submit(fd, queue, mock::Command{mock::Command::Op::Fill, bo, 0, 1}, event);
    });
    for (int i = 0; i < 20; ++i) { // while it waits, it has nothing of the driver open
        EXPECT_EQ(filesUnder(m.root()), onlyTheNode);
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(submitted.wait_for(0ms), std::future_status::timeout) << "submitted while held";

    ASSERT_OK(mock::releaseCalls(m.root(), held.key));

    ASSERT_EQ(submitted.wait_for(10s), std::future_status::ready);
    ASSERT_OK(submitted.get());
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(fd));
    EXPECT_EQ(s.findQueue(queue)->completed, 1u);
    ASSERT_OK(mock::closeDevice(fd));
}

// A thread that waited at the gate across a checkpoint resolved its fd before the restore put
// another context behind that fd; the context it found then is gone. Its call must go to the
// context the fd holds now (bench.load: a restored process failed with "context 13 is gone").
TEST(
    MockCallGate,
    GivenAThreadHeldAtTheGate_WhenItsFdIsRestoredOntoAnotherContextAndTheOldOneGoes_ThenTheCallReachesTheNewOne) {
    MockMachine m;
    ASSERT_OK_ASSIGN(int fd, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(int restored, mock::openDevice(m.root(), 0));
    ASSERT_OK_ASSIGN(mock::ContextState before, mock::queryContext(fd));
    ASSERT_OK_ASSIGN(uint32_t bo, mock::allocBo(restored, 4096, 1, 0x1000));
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));
    auto queried = std::async(std::launch::async, [&] { return mock::queryContext(fd); });
    EXPECT_EQ(queried.wait_for(200ms), std::future_status::timeout) << "queried while held";

    // The restore: the fd now holds the other context's node, and the old context is gone.
    std::string oldNode = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd));
    uint32_t oldId = mock::contextIdOfNodePath(m.root(), oldNode);
    ASSERT_NE(oldId, 0u) << oldNode;
    ASSERT_EQ(dup2(restored, fd), fd);
    mock::Context(m.root(), oldId).destroy();
    ASSERT_OK(mock::releaseCalls(m.root(), held.key));

    ASSERT_EQ(queried.wait_for(10s), std::future_status::ready);
    auto s = queried.get();
    ASSERT_OK(s);
    EXPECT_TRUE(before.bos.empty());
    ASSERT_EQ(s->bos.size(), 1u);
    EXPECT_EQ(s->bos[0].handle, bo);
    close(restored);
    ASSERT_OK(mock::closeDevice(fd));
}

// In-process checkpoints (the session tests, `criu-amdgpu` on itself) query their own contexts
// while paused: the thread that closed a gate is never frozen by it, so its own calls pass.
TEST(MockCallGate,
     GivenGateClosedByThisThread_WhenThisThreadCalls_ThenItPassesButOtherThreadsWait) {
    MockMachine m;
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));
    {
        mock::GateCall own;
        ASSERT_OK(own.enter(m.root(), "query on context 1"));
    }
    auto other = std::async(std::launch::async, [&] {
        mock::GateCall call;
        return call.enter(m.root(), "query on context 1");
    });
    EXPECT_EQ(other.wait_for(200ms), std::future_status::timeout) << "another thread passed";

    ASSERT_OK(mock::releaseCalls(m.root(), held.key));

    ASSERT_EQ(other.wait_for(10s), std::future_status::ready);
    ASSERT_OK(other.get());
}

TEST(MockCallGate, GivenHeldParent_WhenAChildForkedAfterwardsCalls_ThenTheChildWaitsToo) {
    MockMachine m;
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));
    int entered[2];
    ASSERT_EQ(pipe(entered), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(entered[0]);
        mock::GateCall call;
        char ok = call.enter(m.root(), "open GPU 0").ok() ? 'y' : 'n';
        _exit(write(entered[1], &ok, 1) == 1 ? 0 : 1);
    }
    close(entered[1]);
    EXPECT_FALSE(readableWithin(entered[0], 200)) << "the child entered while its parent was held";

    ASSERT_OK(mock::releaseCalls(m.root(), held.key));

    ASSERT_TRUE(readableWithin(entered[0], 10000)) << "the child never entered";
    char ok = 0;
    EXPECT_EQ(read(entered[0], &ok, 1), 1);
    EXPECT_EQ(ok, 'y');
    close(entered[0]);
    waitpid(child, nullptr, 0);
}

TEST(MockCallGate, GivenAnnouncementOfAThreadThatIsGone_WhenHoldCalls_ThenItIsRemovedNotWaitedFor) {
    MockMachine m;
    ASSERT_OK_ASSIGN(mock::TaskKey key, mock::taskKeyOf(getpid()));
    std::filesystem::create_directories(mock::MachinePaths{m.root()}.gate());
    std::string stale = mock::MachinePaths{m.root()}.gate() + "/" + key.name() + ".call-999999";
    ASSERT_EQ(symlink("submit on context 1", stale.c_str()), 0);

    auto start = std::chrono::steady_clock::now();
    ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), getpid(), 5000));

    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_TRUE(held.waitedFor.empty());
    EXPECT_FALSE(std::filesystem::is_symlink(stale));
    ASSERT_OK(mock::releaseCalls(m.root(), held.key));
}

TEST(MockCallGate,
     GivenAProcessStoppedInsideACall_WhenHoldCalls_ThenFailsNamingTheCallAndOpensTheGate) {
    MockMachine m;
    ChildStoppedInCall child(m.root(), "submit on context 4", false);
    ASSERT_TRUE(child.stopped());

    auto start = std::chrono::steady_clock::now();
    auto held = mock::holdCalls(m.root(), child.pid(), 10000);

    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "it waited for a stopped task";
    EXPECT_THAT(errorText(held), HasSubstr("stopped by a signal inside a mock GPU driver call"));
    EXPECT_THAT(errorText(held), HasSubstr("submit on context 4"));
    ASSERT_OK_ASSIGN(mock::TaskKey key, mock::taskKeyOf(child.pid()));
    EXPECT_FALSE(mock::callsHeld(m.root(), key));
}

TEST(MockCallGate, GivenACallInAnotherPidNamespace_WhenHoldCalls_ThenTheNamespacesPidsAreMatched) {
    MockMachine m;
    pid_t tester = fork(); // unshare(CLONE_NEWPID) changes the namespace of later children for good
    ASSERT_GE(tester, 0);
    if (tester == 0) {
        bool named = false;
        {
            ChildStoppedInCall child(m.root(), "alloc on context 2", true);
            auto held = child.stopped() ? mock::holdCalls(m.root(), child.pid(), 10000)
                                        : base::Result<mock::HeldCalls>(base::makeError(
                                              base::ErrorCode::Internal, "no child"));
            // The child is pid 1 of its namespace: the hold found its call under that pid.
            named = !held.ok() && held.error().describe().find("thread 1: alloc on context 2") !=
                                      std::string::npos;
        } // the child is killed here (_exit runs no destructor)
        _exit(named ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(tester, &status, 0), tester);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the call of pid 1 of a new pid namespace was not found by the hold";
}

// The mock backend's dump holds a paused process's gate and its children's (criu pauses those
// later); whatever criu does not unpause is opened when the dump ends.
TEST(MockHeldGates, GivenAProcessWithAChildHeld_WhenTheDumpEnds_ThenBothGatesAreOpenAgain) {
    MockMachine m;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        for (;;)
            pause();
    }
    ASSERT_OK_ASSIGN(mock::TaskKey self, mock::taskKeyOf(getpid()));
    ASSERT_OK_ASSIGN(mock::TaskKey childKey, mock::taskKeyOf(child));
    {
        mock::HeldGates gates(m.root());
        ASSERT_OK(gates.hold(getpid()));
        EXPECT_TRUE(mock::callsHeld(m.root(), self));
        EXPECT_TRUE(mock::callsHeld(m.root(), childKey))
            << "the child was not held with its parent";
        gates.release(getpid());
        EXPECT_FALSE(mock::callsHeld(m.root(), self));
        EXPECT_TRUE(mock::callsHeld(m.root(), childKey));
    }
    EXPECT_FALSE(mock::callsHeld(m.root(), childKey)) << "the end of the dump left a gate closed";
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
}

// The invariant the gate exists for, on a busy process: after a hold, the process can be stopped
// at once (as criu stops it) and it never has a file of the driver open other than its device
// node, whatever moment the hold came at.
TEST(MockCallGate, GivenABusyProcess_WhenHeldAndStoppedAtRandomMoments_ThenItIsNeverInsideACall) {
    MockMachine m;
    pid_t busy = fork();
    ASSERT_GE(busy, 0);
    if (busy == 0) {
        auto fd = mock::openDevice(m.root(), 0);
        if (!fd.ok())
            _exit(1);
        auto queue = mock::createQueue(*fd);
        auto event = mock::createEvent(*fd);
        auto bo = mock::allocBo(*fd, 256 * 1024, 1, 0x1000);
        if (!queue.ok() || !event.ok() || !bo.ok())
            _exit(1);
        for (uint64_t seed = 0;; ++seed)
            if (!mock::submit(*fd, *queue, mock::Command{mock::Command::Op::Fill, *bo, 0, seed},
                              *event)
                     .ok())
                _exit(1);
    }
    std::this_thread::sleep_for(100ms);
    int insideACall = 0;
    for (int i = 0; i < 30; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(1000 + (i * 7919) % 5000));
        ASSERT_OK_ASSIGN(mock::HeldCalls held, mock::holdCalls(m.root(), busy, 10000));
        insideACall += held.waitedFor.empty() ? 0 : 1;
        ASSERT_EQ(kill(busy, SIGSTOP), 0);
        int status = 0;
        ASSERT_EQ(waitpid(busy, &status, WUNTRACED), busy);
        ASSERT_TRUE(WIFSTOPPED(status)) << "the busy process died";
        std::vector<std::string> open = filesUnder(m.root(), busy);
        ASSERT_EQ(open.size(), 1u) << "stopped holding " << testing::PrintToString(open);
        EXPECT_NE(open[0].find("/renderD"), std::string::npos) << open[0];
        kill(busy, SIGCONT);
        ASSERT_OK(mock::releaseCalls(m.root(), held.key));
    }
    kill(busy, SIGKILL);
    waitpid(busy, nullptr, 0);
    // Most moments of a busy process are inside a call: the holds must have met some.
    EXPECT_GT(insideACall, 0) << "no hold came while a call was in progress";
}

} // namespace
