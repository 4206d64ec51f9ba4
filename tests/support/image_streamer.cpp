#include "image_streamer.h"

#include <fcntl.h>

#include <csignal>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace testsupport {
namespace {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;

bool writeAll(int fd, const void* data, size_t len) {
    const char* p = static_cast<const char*>(data);
    while (len > 0) {
        ssize_t n = ::write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

/// Reads exactly `len` bytes; 0 at a clean end before the first byte, -1 on errors or a short
/// read, 1 when complete.
int readAll(int fd, void* data, size_t len) {
    char* p = static_cast<char*>(data);
    size_t done = 0;
    while (done < len) {
        ssize_t n = ::read(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return done == 0 ? 0 : -1;
        done += static_cast<size_t>(n);
    }
    return 1;
}

/// A protobuf message framed the way criu's pb_write_one() frames it: u32 size, then bytes.
bool sendFramed(int fd, const std::string& message) {
    uint32_t size = static_cast<uint32_t>(message.size());
    return writeAll(fd, &size, sizeof(size)) && writeAll(fd, message.data(), message.size());
}

/// Reads one framed message: 1 with `*message`, 0 at the end of the connection, -1 on errors.
int recvFramed(int fd, std::string* message) {
    uint32_t size = 0;
    int r = readAll(fd, &size, sizeof(size));
    if (r <= 0)
        return r;
    message->assign(size, '\0');
    return readAll(fd, message->data(), size) == 1 ? 1 : -1;
}

std::string varint(uint64_t v) {
    std::string out;
    do {
        out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
    return out;
}

/// img_streamer_request_entry { required string filename = 1; }: field 1, wire type 2.
std::string encodeRequest(const std::string& filename) {
    return std::string(1, '\x0a') + varint(filename.size()) + filename;
}

bool decodeRequest(const std::string& msg, std::string* filename) {
    if (msg.empty() || msg[0] != '\x0a')
        return false;
    uint64_t len = 0;
    size_t i = 1;
    for (int shift = 0; i < msg.size() && shift < 64; shift += 7) {
        uint8_t b = static_cast<uint8_t>(msg[i++]);
        len |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (msg.size() - i != len)
                return false;
            *filename = msg.substr(i);
            return true;
        }
    }
    return false;
}

/// img_streamer_reply_entry { required bool exists = 1; }: field 1, wire type 0.
std::string encodeReply(bool exists) {
    return std::string(1, '\x08') + (exists ? '\x01' : '\x00');
}

bool decodeReply(const std::string& msg, bool* exists) {
    if (msg.size() != 2 || msg[0] != '\x08' || (msg[1] != 0 && msg[1] != 1))
        return false;
    *exists = msg[1] == 1;
    return true;
}

/// A message of one byte of data and room for one fd in SCM_RIGHTS (criu's send_fd()).
struct FdMessage {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    FdMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
    }
    FdMessage(const FdMessage&) = delete;
};

bool sendFd(int sock, int fd) {
    FdMessage m;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m.msg, 0) == 1;
}

int recvFd(int sock) {
    FdMessage m;
    if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

base::Result<sockaddr_un> socketAddress(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
        return makeError(ErrorCode::InvalidArgument, "socket path %s is too long", path.c_str());
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

} // namespace

const char* streamerSocketName(StreamerMode mode) {
    return mode == StreamerMode::Capture ? "streamer-capture.sock" : "streamer-serve.sock";
}

base::Result<std::unique_ptr<FakeImageStreamer>>
FakeImageStreamer::start(const std::string& dir, StreamerMode mode,
                         std::map<std::string, std::string> images) {
    signal(SIGPIPE, SIG_IGN); // as criu does: a closed pipe is an error, not a death
    std::string path = dir + "/" + streamerSocketName(mode);
    HAL_TRY_ASSIGN(sockaddr_un addr, socketAddress(path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "socket");
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1) != 0) {
        int err = errno;
        ::close(fd);
        return makeErrnoError(ErrorCode::Io, err, "cannot listen on %s", path.c_str());
    }
    std::unique_ptr<FakeImageStreamer> s(new FakeImageStreamer(mode, fd, path, std::move(images)));
    s->thread_ = std::thread([raw = s.get()] { raw->run(); });
    return s;
}

FakeImageStreamer::FakeImageStreamer(StreamerMode mode, int listenFd, std::string socketPath,
                                     std::map<std::string, std::string> images)
    : mode_(mode), listenFd_(listenFd), socketPath_(std::move(socketPath)),
      images_(std::move(images)) {}

FakeImageStreamer::~FakeImageStreamer() {
    shutdown(listenFd_, SHUT_RDWR);
    if (thread_.joinable())
        thread_.join();
    for (std::thread& t : pipeReaders_)
        if (t.joinable())
            t.join();
    ::close(listenFd_);
    unlink(socketPath_.c_str());
}

void FakeImageStreamer::run() {
    int conn = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0)
        return; // shut down before criu connected
    auto r = serveConnection(conn);
    ::close(conn);
    if (!r.ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = r.error().describe();
    }
}

base::Result<void> FakeImageStreamer::serveConnection(int conn) {
    for (;;) {
        std::string msg, name;
        int got = recvFramed(conn, &msg);
        if (got == 0)
            return base::success(); // criu is done
        if (got < 0 || !decodeRequest(msg, &name))
            return makeError(ErrorCode::Image, "malformed img_streamer_request_entry");
        if (mode_ == StreamerMode::Capture) {
            int pipeFd = recvFd(conn);
            if (pipeFd < 0)
                return makeError(ErrorCode::Io, "no pipe came with the request for %s",
                                 name.c_str());
            std::lock_guard<std::mutex> lock(mutex_);
            requests_.push_back("+" + name);
            pipeReaders_.emplace_back([this, name, pipeFd] { capture(name, pipeFd); });
            continue;
        }
        std::string bytes;
        bool exists;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = images_.find(name);
            exists = it != images_.end();
            if (exists) {
                bytes = std::move(it->second);
                images_.erase(it); // served once
            }
            requests_.push_back((exists ? "+" : "-") + name);
        }
        if (!sendFramed(conn, encodeReply(exists)))
            return makeErrnoError(ErrorCode::Io, errno, "replying about %s", name.c_str());
        if (!exists)
            continue;
        int pipeFd = recvFd(conn);
        if (pipeFd < 0)
            return makeError(ErrorCode::Io, "no pipe came for %s", name.c_str());
        // The whole image before the next request, as criu-image-streamer does; a reader that
        // stops early breaks the pipe, which is its business.
        writeAll(pipeFd, bytes.data(), bytes.size());
        ::close(pipeFd);
    }
}

void FakeImageStreamer::capture(std::string name, int pipeFd) {
    std::string bytes;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(pipeFd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        bytes.append(buf, static_cast<size_t>(n));
    }
    ::close(pipeFd);
    std::lock_guard<std::mutex> lock(mutex_);
    images_[name] += bytes; // a name written twice continues its image, as the streamer does
}

base::Result<std::map<std::string, std::string>> FakeImageStreamer::finish() {
    if (thread_.joinable())
        thread_.join();
    for (std::thread& t : pipeReaders_)
        if (t.joinable())
            t.join();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.empty())
        return makeError(ErrorCode::Image, "image streamer: %s", error_.c_str());
    return images_;
}

std::vector<std::string> FakeImageStreamer::requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
}

base::Result<std::unique_ptr<CriuStreamerClient>>
CriuStreamerClient::connect(const std::string& dir, StreamerMode mode) {
    std::string path = dir + "/" + streamerSocketName(mode);
    HAL_TRY_ASSIGN(sockaddr_un addr, socketAddress(path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "socket");
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        int err = errno;
        ::close(fd);
        return makeErrnoError(ErrorCode::Io, err, "Unable to connect to image streamer socket: %s",
                              path.c_str());
    }
    return std::unique_ptr<CriuStreamerClient>(new CriuStreamerClient(fd, mode));
}

CriuStreamerClient::~CriuStreamerClient() {
    close();
}

void CriuStreamerClient::close() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = -1;
}

int CriuStreamerClient::open(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ < 0 || !sendFramed(fd_, encodeRequest(name)))
        return -1;
    if (mode_ == StreamerMode::Serve) {
        std::string msg;
        bool exists = false;
        if (recvFramed(fd_, &msg) != 1 || !decodeReply(msg, &exists))
            return -1;
        if (!exists)
            return -ENOENT;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    // criu keeps the write end at dump, the read end at restore.
    int mine = mode_ == StreamerMode::Capture ? fds[1] : fds[0];
    int theirs = mode_ == StreamerMode::Capture ? fds[0] : fds[1];
    bool sent = sendFd(fd_, theirs);
    ::close(theirs);
    if (!sent) {
        ::close(mine);
        return -1;
    }
    return mine;
}

formats::StreamerOpenFn CriuStreamerClient::openFn() {
    return [this](const std::string& name, bool) {
        errno = 0;
        int fd = open(name);
        return fd >= 0 || fd == -ENOENT ? fd : -(errno ? errno : EIO);
    };
}

base::Result<std::unique_ptr<StreamerSession>>
StreamerSession::start(const std::string& dir, StreamerMode mode,
                       std::map<std::string, std::string> images) {
    auto session = std::make_unique<StreamerSession>();
    HAL_TRY_ASSIGN(session->streamer, FakeImageStreamer::start(dir, mode, std::move(images)));
    HAL_TRY_ASSIGN(session->client, CriuStreamerClient::connect(dir, mode));
    session->store = formats::makeStreamerStore(session->client->openFn(),
                                                mode == StreamerMode::Capture
                                                    ? formats::StreamDirection::Dump
                                                    : formats::StreamDirection::Restore);
    return session;
}

base::Result<std::map<std::string, std::string>> StreamerSession::finish() {
    store.reset();
    client->close();
    return streamer->finish();
}

base::Result<std::map<std::string, std::string>>
captureDump(const std::string& dir,
            const std::function<base::Result<void>(formats::ImageStore&)>& dump) {
    HAL_TRY_ASSIGN(auto session, StreamerSession::start(dir, StreamerMode::Capture));
    auto dumped = dump(*session->store);
    auto images = session->finish();
    HAL_TRY(dumped);
    return images;
}

} // namespace testsupport
