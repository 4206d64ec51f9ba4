// Pausing a context's queues (the checkpoint side): the marker, clients that wait while paused,
// and phase order.

#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/machine.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using mocktest::MockMachine;
using testing::HasSubstr;
using namespace std::chrono_literals;

/// An open device with a queue, an event and one buffer, as context 1 of the machine.
struct Busy {
    int fd = -1;
    uint32_t queue = 0;
    uint32_t event = 0;
    uint32_t bo = 0;
    ~Busy() {
        if (fd >= 0)
            close(fd);
    }
    mock::Command fill() const { return mock::Command{mock::Command::Op::Fill, bo, 0, 3}; }
};

void openBusy(const MockMachine& m, Busy& b) {
    auto fd = mock::openDevice(m.root(), 0);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    b.fd = *fd;
    ASSERT_OK_ASSIGN(b.queue, mock::createQueue(b.fd));
    ASSERT_OK_ASSIGN(b.event, mock::createEvent(b.fd));
    ASSERT_OK_ASSIGN(b.bo, mock::allocBo(b.fd, 4096, 1, 0x1000));
}

TEST(MockPause, GivenRunningContext_WhenCriuPause_ThenMarkerAndStateSayPaused) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    mock::Context ctx(m.root(), 1);
    EXPECT_FALSE(ctx.pausedMarker());

    ASSERT_OK(mock::criuPause(m.root(), ctx));

    EXPECT_TRUE(ctx.pausedMarker());
    ASSERT_OK_ASSIGN(mock::ContextState s, ctx.load());
    EXPECT_TRUE(s.paused);
}

TEST(MockPause, GivenPausedContext_WhenCriuUnpause_ThenMarkerIsGoneAndStateRunning) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK(mock::criuPause(m.root(), ctx));

    ASSERT_OK(mock::criuUnpause(m.root(), ctx));

    EXPECT_FALSE(ctx.pausedMarker());
    ASSERT_OK_ASSIGN(mock::ContextState s, ctx.load());
    EXPECT_FALSE(s.paused);
}

TEST(MockPause, GivenPausedContext_WhenAThreadSubmits_ThenItWaitsUntilUnpaused) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK(mock::criuPause(m.root(), ctx));

    auto submitted = std::async(std::launch::async,
                                [&] { return mock::submit(b.fd, b.queue, b.fill(), b.event); });
    EXPECT_EQ(submitted.wait_for(200ms), std::future_status::timeout)
        << "submit completed while the queues were paused";
    ASSERT_OK_ASSIGN(mock::ContextState during, mock::queryContext(b.fd));
    EXPECT_EQ(during.findQueue(b.queue)->submitted, 0u);

    ASSERT_OK(mock::criuUnpause(m.root(), ctx));

    ASSERT_EQ(submitted.wait_for(10s), std::future_status::ready) << "submit never resumed";
    auto result = submitted.get();
    ASSERT_TRUE(result.ok()) << result.error().describe();
    ASSERT_OK_ASSIGN(mock::ContextState after, mock::queryContext(b.fd));
    EXPECT_EQ(after.findQueue(b.queue)->completed, 1u);
    EXPECT_EQ(after.findEvent(b.event)->signals, 1u);
}

/// Whether `fd` becomes readable within `ms` milliseconds.
bool readableWithin(int fd, int ms) {
    struct pollfd p {
        fd, POLLIN, 0
    };
    return poll(&p, 1, ms) == 1;
}

TEST(MockPause,
     GivenPausedContext_WhenAChildProcessSubmitsOnTheInheritedFd_ThenItWaitsUntilUnpaused) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK(mock::criuPause(m.root(), ctx));
    int done[2];
    ASSERT_EQ(pipe(done), 0);

    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(done[0]);
        char ok = mock::submit(b.fd, b.queue, b.fill(), b.event).ok() ? 'y' : 'n';
        _exit(write(done[1], &ok, 1) == 1 ? 0 : 1);
    }
    close(done[1]);
    EXPECT_FALSE(readableWithin(done[0], 200)) << "the child's submit ran while paused";

    ASSERT_OK(mock::criuUnpause(m.root(), ctx));

    ASSERT_TRUE(readableWithin(done[0], 10000)) << "the child's submit never resumed";
    char ok = 0;
    EXPECT_EQ(read(done[0], &ok, 1), 1);
    EXPECT_EQ(ok, 'y');
    close(done[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_OK_ASSIGN(mock::ContextState after, mock::queryContext(b.fd));
    EXPECT_EQ(after.findQueue(b.queue)->completed, 1u);
}

TEST(MockPause, GivenPausedContext_WhenQueryContext_ThenItAnswersAtOnceWithPausedState) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    ASSERT_OK(mock::criuPause(m.root(), mock::Context(m.root(), 1)));

    auto start = std::chrono::steady_clock::now();
    ASSERT_OK_ASSIGN(mock::ContextState s, mock::queryContext(b.fd));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_TRUE(s.paused);
    EXPECT_EQ(s.userGpuId, m.gpuId(0));
    EXPECT_EQ(s.bos.size(), 1u);
}

TEST(MockPause, GivenADriverCallInProgress_WhenCriuPause_ThenThePauseWaitsForItToEnd) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    mock::Context ctx(m.root(), 1);
    auto inCall = std::make_unique<mock::ContextLock>(); // what a driver call holds
    ASSERT_OK(inCall->acquire(ctx.dir(), 1000));

    auto paused = std::async(std::launch::async, [&] { return mock::criuPause(m.root(), ctx); });
    EXPECT_EQ(paused.wait_for(200ms), std::future_status::timeout);
    EXPECT_FALSE(ctx.pausedMarker());

    inCall.reset();

    ASSERT_EQ(paused.wait_for(10s), std::future_status::ready);
    auto result = paused.get();
    EXPECT_TRUE(result.ok()) << result.error().describe();
    EXPECT_TRUE(ctx.pausedMarker());
}

TEST(MockPause, GivenRunningContext_WhenCriuCheckpoint_ThenPhaseOrderError) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    auto s = mock::criuCheckpoint(m.root(), mock::Context(m.root(), 1));
    EXPECT_EQ(errorCode(s), base::ErrorCode::PhaseOrder);
    EXPECT_THAT(errorText(s), HasSubstr("mock context 1 checkpointed while its queues run"));
}

TEST(MockPause, GivenPausedContext_WhenCriuCheckpoint_ThenReturnsItsBuffersQueuesAndEvents) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    ASSERT_OK(mock::submit(b.fd, b.queue, b.fill(), b.event));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK(mock::criuPause(m.root(), ctx));

    ASSERT_OK_ASSIGN(mock::ContextState s, mock::criuCheckpoint(m.root(), ctx));

    ASSERT_EQ(s.bos.size(), 1u);
    EXPECT_EQ(s.bos[0].size, 4096u);
    EXPECT_EQ(s.bos[0].gpuVa, 0x1000u);
    ASSERT_NE(s.findQueue(b.queue), nullptr);
    EXPECT_EQ(s.findQueue(b.queue)->completed, 1u);
    ASSERT_NE(s.findEvent(b.event), nullptr);
    EXPECT_EQ(s.findEvent(b.event)->signals, 1u);
}

TEST(MockPause, GivenPausedContext_WhenCriuReadBo_ThenReturnsTheBytesWithoutWaiting) {
    MockMachine m;
    Busy b;
    ASSERT_NO_FATAL_FAILURE(openBusy(m, b));
    auto data = mocktest::pattern(4096, 5);
    ASSERT_OK(mock::writeBo(b.fd, b.bo, 0, data));
    mock::Context ctx(m.root(), 1);
    ASSERT_OK(mock::criuPause(m.root(), ctx));
    std::vector<std::byte> out(4096);
    ASSERT_OK(mock::criuReadBo(m.root(), ctx, b.bo, 0, out));
    EXPECT_EQ(out, data);
}

} // namespace
