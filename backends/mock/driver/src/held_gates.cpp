#include "mockgpu/held_gates.h"

#include "base/log.h"

#include <vector>

namespace mock {
namespace {

/// How long a pause waits for the driver calls in progress of a process to end.
constexpr int kHoldTimeoutMs = 30000;

/// Opens the gate `key` of `pid`; a failure is only logged (the gate was to be opened anyway).
void openGate(const std::string& root, int pid, const TaskKey& key) {
    auto released = releaseCalls(root, key);
    if (!released.ok())
        HAL_LOG_ERROR("mock: opening the call gate of process %d: %s", pid,
                      released.error().describe().c_str());
}

} // namespace

HeldGates::~HeldGates() {
    for (const auto& [pid, key] : held_)
        openGate(root_, pid, key);
}

base::Result<void> HeldGates::hold(int pid) {
    std::vector<int> pids{pid};
    for (int child : descendantsOf(pid))
        pids.push_back(child);
    std::vector<int> heldNow;
    for (int p : pids) {
        if (held_.count(p))
            continue;
        auto held = holdCalls(root_, p, kHoldTimeoutMs);
        if (!held.ok() && held.error().code() == base::ErrorCode::NotFound) {
            // Gone, or its /proc unreadable: it is in no call of ours that could be waited for.
            HAL_LOG_DEBUG("mock: no call gate for process %d: %s", p,
                          held.error().describe().c_str());
            continue;
        }
        if (!held.ok()) {
            for (int q : heldNow) {
                openGate(root_, q, held_[q]);
                held_.erase(q);
            }
            return std::move(held.error().addContext(
                base::strFormat("while holding the mock GPU driver calls of process %d", p)));
        }
        held_[p] = held->key;
        heldNow.push_back(p);
        if (!held->waitedFor.empty()) {
            std::string calls;
            for (const std::string& c : held->waitedFor)
                calls += (calls.empty() ? "" : "; ") + c;
            HAL_LOG_INFO("mock: process %d was inside %zu driver call(s) when its GPU was paused; "
                         "waited for them to end (%s)",
                         p, held->waitedFor.size(), calls.c_str());
        }
    }
    return base::success();
}

void HeldGates::release(int pid) {
    auto held = held_.find(pid);
    if (held == held_.end())
        return;
    openGate(root_, pid, held->second);
    held_.erase(held);
}

} // namespace mock
