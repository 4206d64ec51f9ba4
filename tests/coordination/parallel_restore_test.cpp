// Parallel restore: jobs travel from restored tasks (other processes) to criu's main process with
// their fds, whatever their size; lanes run jobs in order, lanes at once, within the staging
// budget; the first failure is returned, later jobs are dropped with their fds closed.
#include "coordination/handoff_socket.h"
#include "coordination/parallel_restore.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

namespace {

using ::testing::HasSubstr;

/// A memfd holding `text`.
int memfdWith(const std::string& text) {
    int fd = memfd_create("bo", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    return fd;
}

/// What a file descriptor holds from its start.
std::string contentsOf(int fd) {
    std::string out(256, '\0');
    ssize_t n = pread(fd, out.data(), out.size(), 0);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
}

size_t openFdCount() {
    size_t n = 0;
    for (int fd = 0; fd < 4096; ++fd)
        if (fcntl(fd, F_GETFD) >= 0)
            ++n;
    return n;
}

std::unique_ptr<coordination::ContentHandoff>
handoffOver(const coordination::HandoffChannel& channel) {
    int fd = channel.sendFd();
    return coordination::makeSocketHandoff([fd]() -> base::Result<coordination::SendEnd> {
        return coordination::SendEnd{fd, false};
    });
}

TEST(HandoffSocket, GivenAJobWithManyFdsAndALongPayloadFromAnotherProcess_ThenItArrivesWhole) {
    auto channel = coordination::HandoffChannel::create();
    ASSERT_TRUE(channel.ok()) << channel.error().describe();
    std::string payload(200000, 'p');
    for (size_t i = 0; i < payload.size(); i += 997)
        payload[i] = static_cast<char>('a' + i % 26);
    const size_t fdCount = 600; // more than two messages' worth
    pid_t child = fork();
    if (child == 0) {
        auto handoff = handoffOver(**channel);
        coordination::ContentJob job;
        job.lane = "GPU 0x1234";
        job.lanes = 3;
        job.payload = payload;
        for (size_t i = 0; i < fdCount; ++i)
            job.fds.push_back(memfdWith("bo " + std::to_string(i)));
        _exit(handoff->send(job).ok() ? 0 : 1);
    }
    auto source = channel.value()->receiver();
    auto got = source->next();
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_TRUE(got.ok()) << got.error().describe();
    ASSERT_TRUE(got.value().has_value());
    coordination::ContentJob& job = **got;
    EXPECT_EQ(job.lane, "GPU 0x1234");
    EXPECT_EQ(job.lanes, 3u);
    EXPECT_EQ(job.payload, payload);
    ASSERT_EQ(job.fds.size(), fdCount);
    for (size_t i : {size_t{0}, size_t{249}, size_t{250}, fdCount - 1})
        EXPECT_EQ(contentsOf(job.fds[i]), "bo " + std::to_string(i));
    for (int fd : job.fds) {
        EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
    }
    ASSERT_TRUE(source->stop().ok());
    auto end = source->next();
    ASSERT_TRUE(end.ok());
    EXPECT_FALSE(end.value().has_value()) << "stop() ends the stream after the jobs sent";
}

TEST(HandoffSocket, GivenATaskThatDiesHalfWay_ThenTheReceiverReportsItInsteadOfWaiting) {
    auto channel = coordination::HandoffChannel::create().value();
    pid_t child = fork();
    if (child == 0) {
        // Hand over a private end and die before writing the job into it.
        int pair[2];
        socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair);
        char marker = 'J';
        iovec iov{&marker, 1};
        char control[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pair[1], sizeof(int));
        sendmsg(channel->sendFd(), &msg, 0);
        _exit(0);
    }
    waitpid(child, nullptr, 0);
    auto source = channel->receiver();
    auto got = source->next();
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.error().describe(), HasSubstr("ended before its description"));
}

/// Jobs recorded by a runner; `block` holds a lane until released.
struct Recorder {
    std::mutex mu;
    std::vector<std::string> order;
    std::atomic<int> running{0};
    std::atomic<int> maxRunning{0};
    std::set<size_t> stagingSizes;
    std::string failPayload;
    std::atomic<int> closed{0};

    coordination::ContentJobRunner runner() {
        return [this](coordination::ContentJob& job,
                      std::span<std::byte> staging) -> base::Result<void> {
            int now = ++running;
            int seen = maxRunning.load();
            while (now > seen && !maxRunning.compare_exchange_weak(seen, now)) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            {
                std::lock_guard lock(mu);
                order.push_back(job.payload);
                stagingSizes.insert(staging.size());
            }
            for (int fd : job.fds)
                close(fd);
            --running;
            if (job.payload == failPayload)
                return base::makeError(base::ErrorCode::Kernel, "BO 7 of %s failed",
                                       job.lane.c_str());
            return base::success();
        };
    }
    coordination::ContentJobDiscarder discarder() {
        return [this](coordination::ContentJob& job) {
            for (int fd : job.fds) {
                close(fd);
                ++closed;
            }
        };
    }
};

/// A JobSource fed by the test in this process.
class QueueSource : public coordination::JobSource {
public:
    void push(coordination::ContentJob job) {
        {
            std::lock_guard lock(mu_);
            jobs_.push_back(std::move(job));
        }
        cv_.notify_all();
    }
    base::Result<std::optional<coordination::ContentJob>> next() override {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || !jobs_.empty(); });
        if (jobs_.empty())
            return std::optional<coordination::ContentJob>();
        coordination::ContentJob job = std::move(jobs_.front());
        jobs_.erase(jobs_.begin());
        return std::optional<coordination::ContentJob>(std::move(job));
    }
    base::Result<void> stop() override {
        {
            std::lock_guard lock(mu_);
            stopped_ = true;
        }
        cv_.notify_all();
        return base::success();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<coordination::ContentJob> jobs_;
    bool stopped_ = false;
};

coordination::ContentJob job(const std::string& lane, const std::string& payload, uint32_t lanes) {
    coordination::ContentJob j;
    j.lane = lane;
    j.lanes = lanes;
    j.payload = payload;
    return j;
}

TEST(ParallelRestore, GivenJobsOfTwoLanes_ThenEachLaneRunsInOrderAndTheLanesAtOnceWithinTheBudget) {
    Recorder rec;
    const uint64_t budget = 1 << 20;
    coordination::ParallelRestore pr(rec.runner(), rec.discarder(), budget);
    auto source = std::make_unique<QueueSource>();
    QueueSource* q = source.get();
    pr.start(std::move(source));
    for (int i = 0; i < 3; ++i) {
        q->push(job("GPU A", "A" + std::to_string(i), 2));
        q->push(job("GPU B", "B" + std::to_string(i), 2));
    }

    auto r = pr.finish();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(pr.jobsRun(), 6u);
    EXPECT_EQ(rec.maxRunning.load(), 2) << "the two lanes ran at once";
    std::vector<std::string> a, b;
    for (const std::string& p : rec.order)
        (p[0] == 'A' ? a : b).push_back(p);
    EXPECT_EQ(a, (std::vector<std::string>{"A0", "A1", "A2"}));
    EXPECT_EQ(b, (std::vector<std::string>{"B0", "B1", "B2"}));
    EXPECT_EQ(rec.stagingSizes, (std::set<size_t>{budget / 2}));
    EXPECT_LE(pr.peakStagingBytes(), budget);
}

TEST(ParallelRestore, GivenMoreLanesThanTheCheckpointSaid_ThenTheBudgetIsNeverExceeded) {
    Recorder rec;
    const uint64_t budget = 1 << 20;
    coordination::ParallelRestore pr(rec.runner(), rec.discarder(), budget);
    auto source = std::make_unique<QueueSource>();
    QueueSource* q = source.get();
    pr.start(std::move(source));
    for (int i = 0; i < 4; ++i)
        q->push(job("GPU " + std::to_string(i), "J" + std::to_string(i), 2));

    ASSERT_TRUE(pr.finish().ok());

    EXPECT_EQ(pr.jobsRun(), 4u);
    EXPECT_LE(pr.peakStagingBytes(), budget);
    EXPECT_LE(rec.maxRunning.load(), 2);
}

TEST(ParallelRestore,
     GivenAJobThatFails_ThenFinishReturnsItsErrorAndLaterJobsAreDroppedWithTheirFds) {
    Recorder rec;
    rec.failPayload = "A0";
    coordination::ParallelRestore pr(rec.runner(), rec.discarder(), 1 << 20);
    auto source = std::make_unique<QueueSource>();
    QueueSource* q = source.get();
    pr.start(std::move(source));
    q->push(job("GPU A", "A0", 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    coordination::ContentJob later = job("GPU A", "A1", 1);
    later.fds = {memfdWith("x"), memfdWith("y")};
    q->push(std::move(later));

    auto r = pr.finish();

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("BO 7 of GPU A failed"));
    EXPECT_THAT(r.error().describe(), HasSubstr("while restoring the BO contents of GPU A"));
    EXPECT_EQ(rec.order, (std::vector<std::string>{"A0"}));
    EXPECT_EQ(rec.closed.load(), 2);
}

TEST(ParallelRestore, GivenTheSocketFromForkedTasks_ThenEveryJobRunsAndNoFdIsLeft) {
    size_t fdsBefore = openFdCount();
    {
        auto channel = coordination::HandoffChannel::create().value();
        // The tasks send before the worker runs (fork while this process has no other thread);
        // the jobs wait in the sockets.
        std::vector<pid_t> children;
        for (int t = 0; t < 3; ++t) {
            pid_t child = fork();
            if (child == 0) {
                auto handoff = handoffOver(*channel);
                for (int g = 0; g < 2; ++g) {
                    coordination::ContentJob j =
                        job("GPU " + std::to_string(g),
                            "task" + std::to_string(t) + "-gpu" + std::to_string(g), 2);
                    j.fds = {memfdWith("a"), memfdWith("b")};
                    if (!handoff->send(j).ok())
                        _exit(1);
                }
                _exit(0);
            }
            children.push_back(child);
        }
        for (pid_t c : children) {
            int status = 0;
            waitpid(c, &status, 0);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        Recorder rec;
        coordination::ParallelRestore pr(rec.runner(), rec.discarder(), 1 << 20);
        pr.start(channel->receiver());

        auto r = pr.finish();

        ASSERT_TRUE(r.ok()) << r.error().describe();
        EXPECT_EQ(pr.jobsRun(), 6u);
        EXPECT_EQ(rec.order.size(), 6u);
    }
    EXPECT_EQ(openFdCount(), fdsBefore);
}

TEST(ParallelRestore, GivenItWasNeverStarted_ThenFinishHasNothingToDo) {
    Recorder rec;
    coordination::ParallelRestore pr(rec.runner(), rec.discarder(), 1 << 20);
    EXPECT_FALSE(pr.running());
    EXPECT_TRUE(pr.finish().ok());
}

} // namespace
