#pragma once
/// \file
/// Threads of the plugin inside criu: they block every signal, so criu's handlers (SIGCHLD above
/// all, which criu waits for its tasks with) keep running on criu's own thread, as they expect.

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include <signal.h>

namespace base {

/// A std::thread running `fn` with every blockable signal blocked.
template <typename Fn> std::thread quietThread(Fn&& fn) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    std::thread t(std::forward<Fn>(fn));
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return t;
}

/// Stops a worker that waits on `changed` under `mu` and returns once it sees `stop`: sets it,
/// wakes the worker and joins it. Nothing when the worker never started or was joined already.
inline void stopWorker(std::thread& worker, std::mutex& mu, std::condition_variable& changed,
                       bool& stop) {
    if (!worker.joinable())
        return;
    {
        std::lock_guard lock(mu);
        stop = true;
    }
    changed.notify_all();
    worker.join();
}

} // namespace base
