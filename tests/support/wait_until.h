#pragma once
/// \file
/// Waiting, in a test, for something another process does.

#include <chrono>
#include <functional>
#include <thread>

namespace testsupport {

/// Polls `done` every 5 ms for up to `limit`; its last answer.
inline bool within(std::chrono::milliseconds limit, const std::function<bool()>& done) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (done())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return done();
}

} // namespace testsupport
