#include "coordination/fd_message.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace coordination {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::success;

Result<void> sendFdMessage(int sock, const void* data, size_t len, std::span<const int> fds,
                           const char* what) {
    if (fds.size() > kFdsPerMessage)
        return makeError(ErrorCode::InvalidArgument, "%s: %zu fds in one message (at most %zu)",
                         what, fds.size(), kFdsPerMessage);
    iovec iov{const_cast<void*>(data), len};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control;
    if (!fds.empty()) {
        control.resize(CMSG_SPACE(fds.size() * sizeof(int)));
        msg.msg_control = control.data();
        msg.msg_controllen = control.size();
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    for (;;) {
        ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(len))
            return success();
        if (n < 0 && errno == EINTR)
            continue;
        return makeErrnoError(ErrorCode::Io, n < 0 ? errno : EIO, "%s", what);
    }
}

Result<FdMessage> receiveFdMessage(int sock, size_t maxBytes, const char* what) {
    FdMessage out;
    out.bytes.resize(maxBytes);
    std::vector<char> control(CMSG_SPACE(kFdsPerMessage * sizeof(int)));
    iovec iov{out.bytes.data(), out.bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n;
    do {
        n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return makeErrnoError(ErrorCode::Io, errno, "receiving %s", what);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const int* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
        out.fds.insert(out.fds.end(), fds, fds + count);
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (int f : out.fds)
            ::close(f);
        return makeError(ErrorCode::Io, "a message of %s was cut short (%s)", what,
                         msg.msg_flags & MSG_CTRUNC ? "too many fds" : "too long");
    }
    out.bytes.resize(static_cast<size_t>(n));
    out.end = n == 0 && out.fds.empty();
    return out;
}

} // namespace coordination
