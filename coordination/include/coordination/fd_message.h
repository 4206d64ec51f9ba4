#pragma once
/// \file
/// One message with fds over a unix socket (SCM_RIGHTS): how parallel restore hands BOs to
/// criu's main process, and how the sample workloads hand each other GPU memory.

#include "base/result.h"

#include <cstddef>
#include <span>
#include <vector>

namespace coordination {

using base::Result;

/// Most fds one message carries (the kernel's SCM_MAX_FD is 253).
inline constexpr size_t kFdsPerMessage = 250;

/// A received message: its bytes and the fds that came with it (owned by the receiver).
struct FdMessage {
    std::vector<char> bytes;
    std::vector<int> fds;
    bool end = false; ///< the peer closed its end
};

/// Sends `len` bytes of `data` and copies of `fds` (at most kFdsPerMessage) in one message;
/// `what` says what is sent, in errors. The errno of a failed send stays in the error (EAGAIN
/// when a send timeout ran out).
Result<void> sendFdMessage(int sock, const void* data, size_t len, std::span<const int> fds,
                           const char* what);

/// Receives one message of at most `maxBytes` bytes; the fds come close-on-exec. A message cut
/// short (too long, too many fds) is an error and its fds are closed.
Result<FdMessage> receiveFdMessage(int sock, size_t maxBytes, const char* what);

} // namespace coordination
