#pragma once
/// \file
/// The call gates one dump of the mock backend holds (call_gate.h): closed when a process is
/// paused, opened when it is unpaused, and all opened when the dump ends however it ends.

#include "mockgpu/call_gate.h"

#include "base/result.h"

#include <map>
#include <string>

namespace mock {

/// The closed call gates of one dump, by pid.
class HeldGates {
public:
    /// The gates of the machine at `root`.
    explicit HeldGates(std::string root) : root_(std::move(root)) {}
    /// Opens every gate still held (of processes criu never unpaused).
    ~HeldGates();
    HeldGates(const HeldGates&) = delete;
    HeldGates& operator=(const HeldGates&) = delete;

    /// Closes the gates of `pid` and of its descendants (criu pauses those later, and in a
    /// container only after freezing them) and waits for their calls in progress. On failure no
    /// gate closed here stays closed.
    base::Result<void> hold(int pid);
    /// Opens the gate of `pid` again, if held.
    void release(int pid);

private:
    std::string root_;
    std::map<int, TaskKey> held_; ///< pid -> its closed gate
};

} // namespace mock
