#pragma once
/// \file
/// Threads of the plugin inside criu: they block every signal, so criu's handlers (SIGCHLD above
/// all, which criu waits for its tasks with) keep running on criu's own thread, as they expect.

#include <thread>
#include <utility>

#include <signal.h>

namespace hal {

/// A std::thread running `fn` with every blockable signal blocked.
template <typename Fn> std::thread quietThread(Fn&& fn) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    std::thread t(std::forward<Fn>(fn));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
}

} // namespace hal
