#pragma once
/// \file
/// A hal::ShareExchange over the fake kernel's fds, for tests in which several restored tasks
/// (one KfdDevice each, as criu's forks have) hand each other GPU memory: publish keeps a copy
/// of the fd (the fake's dup), fetch hands out another copy, or fails at once when nothing was
/// published under the key (as the real exchange does when it gives up waiting).

#include "fake_kfd.h"

#include "hal/share_exchange.h"

#include <map>

namespace fakekfd {

class FakeShareExchange final : public hal::ShareExchange {
public:
    explicit FakeShareExchange(FakeKernel& kernel) : kernel_(kernel) {}
    ~FakeShareExchange() override {
        for (auto& [key, fd] : fds_)
            kernel_.close(fd);
    }

    hal::Result<void> publish(uint64_t key, int fd) override {
        if (fds_.count(key))
            return hal::success();
        int copy = kernel_.dup(fd);
        if (copy < 0)
            return hal::makeErrnoError(hal::ErrorCode::Io, -copy, "cannot keep fd %d", fd);
        fds_.emplace(key, copy);
        ++published;
        return hal::success();
    }

    hal::Result<int> fetch(uint64_t key, std::chrono::milliseconds,
                           const std::string& what) override {
        auto it = fds_.find(key);
        if (it == fds_.end())
            return hal::makeError(hal::ErrorCode::NotFound,
                                  "%s: no restored task published its memory", what.c_str());
        return kernel_.dup(it->second);
    }

    int published = 0;

private:
    FakeKernel& kernel_;
    std::map<uint64_t, int> fds_;
};

} // namespace fakekfd
