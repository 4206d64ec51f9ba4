#include "coordination/handoff_socket.h"

#include "coordination/fd_message.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace coordination {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::success;

namespace {

constexpr uint32_t kJobMagic = 0x4a504741; // "AGPJ"
constexpr uint32_t kJobVersion = 1;
constexpr char kJobMarker = 'J';
constexpr char kEndMarker = 'Q';
/// Bytes of payload per message (far below the socket's buffer).
constexpr size_t kPayloadPerMessage = 64 << 10;
/// How long a task waits for criu's main process to take a job before it gives up.
constexpr int kSendTimeoutSeconds = 120;

/// The first message of a job; the lane's name follows it in the same message.
struct JobHeader {
    uint32_t magic = kJobMagic;
    uint32_t version = kJobVersion;
    uint32_t lanes = 0;
    uint32_t laneBytes = 0;
    uint64_t payloadBytes = 0;
    uint64_t fdCount = 0;
};

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

Result<void> sendMessage(int fd, const void* data, size_t len, std::span<const int> fds) {
    auto sent = sendFdMessage(fd, data, len, fds, "handing BO contents to criu's main process");
    if (!sent.ok() && (sent.error().sysErrno() == EAGAIN || sent.error().sysErrno() == EWOULDBLOCK))
        return makeError(ErrorCode::Io,
                         "criu's main process took no BO contents for %d s (is its "
                         "parallel-restore worker running? criu calls POST_FORKING to start "
                         "it)",
                         kSendTimeoutSeconds);
    return sent;
}

using Received = FdMessage;

Result<Received> receiveMessage(int fd, size_t maxBytes) {
    return receiveFdMessage(fd, maxBytes, "BO contents handed over by a restored task");
}

void closeAll(std::vector<int>& fds) {
    for (int f : fds)
        ::close(f);
    fds.clear();
}

/// Reads one job from a task's private socket.
Result<ContentJob> readJob(int fd) {
    ContentJob job;
    auto bad = [&](const char* what) {
        closeAll(job.fds);
        return makeError(ErrorCode::Io, "a restored task handed over BO contents that %s", what);
    };
    HAL_TRY_ASSIGN(Received first, receiveMessage(fd, sizeof(JobHeader) + 4096));
    closeAll(first.fds);
    JobHeader h;
    if (first.bytes.size() < sizeof(h))
        return bad(first.end ? "ended before its description (the task died?)"
                             : "do not start with a job header");
    memcpy(&h, first.bytes.data(), sizeof(h));
    if (h.magic != kJobMagic || h.version != kJobVersion ||
        first.bytes.size() != sizeof(h) + h.laneBytes)
        return bad("start with an unknown header (another version of the plugin?)");
    job.lanes = h.lanes;
    job.lane.assign(first.bytes.data() + sizeof(h), h.laneBytes);
    while (job.payload.size() < h.payloadBytes) {
        HAL_TRY_ASSIGN(Received part, receiveMessage(fd, kPayloadPerMessage));
        job.fds.insert(job.fds.end(), part.fds.begin(), part.fds.end());
        if (part.end || !part.fds.empty() ||
            job.payload.size() + part.bytes.size() > h.payloadBytes)
            return bad("end or carry fds before their description is complete");
        job.payload.append(part.bytes.data(), part.bytes.size());
    }
    while (job.fds.size() < h.fdCount) {
        HAL_TRY_ASSIGN(Received part, receiveMessage(fd, sizeof(uint32_t)));
        job.fds.insert(job.fds.end(), part.fds.begin(), part.fds.end());
        if (part.end || part.fds.empty() || job.fds.size() > h.fdCount)
            return bad("do not carry the fds they announce");
    }
    return job;
}

class SocketJobSource final : public JobSource {
public:
    SocketJobSource(int receive, int send) : receive_(receive), send_(send) {}
    Result<std::optional<ContentJob>> next() override {
        HAL_TRY_ASSIGN(Received m, receiveMessage(receive_, 1));
        if (m.end || (m.bytes.size() == 1 && m.bytes[0] == kEndMarker && m.fds.empty()))
            return std::optional<ContentJob>();
        if (m.bytes.size() != 1 || m.bytes[0] != kJobMarker || m.fds.size() != 1) {
            closeAll(m.fds);
            return makeError(ErrorCode::Io, "an unknown message arrived on the parallel-restore "
                                            "socket");
        }
        Fd job(m.fds[0]);
        HAL_TRY_ASSIGN(ContentJob read, readJob(job.get()));
        return std::optional<ContentJob>(std::move(read));
    }
    Result<void> stop() override {
        char end = kEndMarker;
        auto sent = sendMessage(send_, &end, 1, {});
        if (!sent.ok())
            ::shutdown(receive_, SHUT_RD); // next() then sees the end anyway
        return sent;
    }

private:
    int receive_;
    int send_;
};

class SocketHandoff final : public ContentHandoff {
public:
    explicit SocketHandoff(std::function<Result<SendEnd>()> channel)
        : channel_(std::move(channel)) {}
    Result<void> send(const ContentJob& job) override {
        HAL_TRY_ASSIGN(SendEnd end, channel_());
        Fd owned(end.owned ? end.fd : -1);
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
            return makeErrnoError(ErrorCode::Io, errno, "socketpair for parallel restore");
        Fd mine(pair[0]);
        {
            Fd theirs(pair[1]);
            char marker = kJobMarker;
            int fd = theirs.get();
            HAL_TRY(sendMessage(end.fd, &marker, 1, std::span(&fd, 1)));
        }
        timeval timeout{kSendTimeoutSeconds, 0};
        setsockopt(mine.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
        JobHeader h;
        h.lanes = job.lanes;
        h.laneBytes = static_cast<uint32_t>(job.lane.size());
        h.payloadBytes = job.payload.size();
        h.fdCount = job.fds.size();
        std::string first(reinterpret_cast<const char*>(&h), sizeof(h));
        first += job.lane;
        HAL_TRY(sendMessage(mine.get(), first.data(), first.size(), {}));
        for (size_t off = 0; off < job.payload.size(); off += kPayloadPerMessage) {
            size_t n = std::min(kPayloadPerMessage, job.payload.size() - off);
            HAL_TRY(sendMessage(mine.get(), job.payload.data() + off, n, {}));
        }
        for (size_t off = 0; off < job.fds.size(); off += kFdsPerMessage) {
            size_t n = std::min(kFdsPerMessage, job.fds.size() - off);
            uint32_t count = static_cast<uint32_t>(n);
            HAL_TRY(
                sendMessage(mine.get(), &count, sizeof(count), std::span(job.fds).subspan(off, n)));
        }
        return success();
    }

private:
    std::function<Result<SendEnd>()> channel_;
};

} // namespace

Result<std::unique_ptr<HandoffChannel>> HandoffChannel::create() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        return makeErrnoError(ErrorCode::Io, errno, "socketpair for parallel restore");
    return std::unique_ptr<HandoffChannel>(new HandoffChannel(pair[0], pair[1]));
}

HandoffChannel::~HandoffChannel() {
    ::close(send_);
    ::close(receive_);
}

std::unique_ptr<JobSource> HandoffChannel::receiver() {
    return std::make_unique<SocketJobSource>(receive_, send_);
}

std::unique_ptr<ContentHandoff> makeSocketHandoff(std::function<Result<SendEnd>()> sendFd) {
    return std::make_unique<SocketHandoff>(std::move(sendFd));
}

} // namespace coordination
