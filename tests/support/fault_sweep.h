#pragma once
/// \file
/// The fault sweep (issue 55): a dump or a restore is run once recording every kernel or driver
/// call it makes, then once per recorded call and per errno the kernel can answer that call with,
/// failing that one call. After each run the sweep checks what the backend's test says was left
/// behind and that a failure's error names the call, the GPU or file, and the step.
///
/// Each backend's test puts a decorator (it calls FaultPlan::enter before each call) between the
/// backend and the fake of its kernel, and describes the run and its checks as a SweepSpec.
///
/// What runs: the environment variable FAULT_SWEEP=all runs every call; otherwise every
/// `stride`-th call (every 4 * stride-th in a sanitized build), plus the first call of each kind
/// the stride missed (a fixed sample: the same calls on every run).

#include "base/result.h"

#include <cerrno>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace faultsweep {

/// The calls of one run: records them, and fails the one it is told to.
class FaultPlan {
public:
    /// Called by a decorator before call `name`: 0 to make the call, or the -errno to answer
    /// instead of making it.
    int enter(const std::string& name);
    /// Makes the `index`-th call (0-based) fail with -err.
    void failAt(size_t index, int err);
    /// The call failAt chose (SIZE_MAX: none) and its errno.
    size_t target() const;
    int error() const;
    /// Records a call made beyond a decorator's sight (a driver that counts its own calls), and
    /// whether it was the one failed.
    void record(const std::string& name, bool failed);
    /// The calls so far, in order.
    std::vector<std::string> calls() const;
    /// Whether the planned failure was answered, and the name of that call.
    bool fired() const;
    std::string firedName() const;

private:
    mutable std::mutex mu_;
    std::vector<std::string> calls_;
    size_t target_ = static_cast<size_t>(-1);
    int err_ = 0;
    bool fired_ = false;
    std::string firedName_;
};

/// A call that releases something (close, free, destroy, unmap): the decorator makes it even when
/// it answers a failure, as the kernel releases an fd whose close(2) fails.
inline bool releasingCall(const std::string& name) {
    for (const char* word : {"close", "free", "Free", "destroy", "Destroy", "deinitialize",
                             "Deinitialize", "unmap", "Unmap"})
        if (name.find(word) != std::string::npos)
            return true;
    return false;
}

/// What one run left behind and how it ended.
struct SweepRun {
    base::Result<void> result = base::success();
    std::vector<std::string> leftBehind; ///< one line per thing left (empty: nothing)
};

/// A dump or restore to sweep.
struct SweepSpec {
    std::string title; ///< "kfd dump"
    /// Runs the dump or restore on a fresh fake with `plan` in front of its kernel, then undoes
    /// it as criu does after a failure and reports what was left.
    std::function<SweepRun(FaultPlan& plan)> run;
    /// The errnos to fail a call with (its kernel's answers).
    std::function<std::vector<int>(const std::string& call)> errnosFor;
    /// Words a failure's message must hold one of, naming the GPU or file.
    std::vector<std::string> gpuOrFile;
    /// Words a failure's message must hold one of, naming the step.
    std::vector<std::string> steps;
    /// Words naming a call in the backend's messages (default: callWords).
    std::function<std::vector<std::string>(const std::string& call)> wordsOf;
    /// The sample CI runs: every `stride`-th call (a run of one call counting by its ends), plus
    /// the first of each kind.
    size_t stride = 1;
};

/// What a sweep tried and found.
struct SweepFigure {
    size_t calls = 0;     ///< calls the recording run made
    size_t sampled = 0;   ///< calls failed (all of them with FAULT_SWEEP=all)
    size_t runs = 0;      ///< calls x errnos tried
    size_t failed = 0;    ///< runs that failed with a clear error
    size_t recovered = 0; ///< runs that succeeded after EINTR/EAGAIN (retried by design)
    size_t tolerated = 0; ///< runs that succeeded after another failure (a release, a probe)
    size_t leaked = 0;    ///< runs that left anything behind
    size_t unclear = 0;   ///< failures whose error did not name the call, GPU/file or step
    size_t unfired = 0;   ///< runs whose planned call was never made (the run differed)
};

/// Whether FAULT_SWEEP=all asks for every call.
bool sweepAll();

/// The indexes a sweep fails: all, or every `stride`-th plus the first of each kind.
std::vector<size_t> sampleCalls(const std::vector<std::string>& calls, size_t stride, bool all);

/// The errnos every call can fail with: EIO, ENOMEM, EINTR, EAGAIN, EFAULT.
std::vector<int> commonErrnos();

/// The words naming `call` in a message: the name itself, and for "ioctl NAME(OP)" NAME and OP.
std::vector<std::string> callWords(const std::string& call);

/// "ioctl DRM_IOCTL_AMDGPU_GEM_VA", "ioctl AMDKFD_IOC_CRIU_OP": the ioctls the backends make, by
/// type and number ("ioctl 0x..." for others).
std::string ioctlName(unsigned long request);

/// Runs the sweep, reports each problem as a test failure (the first few in full), prints the
/// figure and returns it.
SweepFigure runSweep(const SweepSpec& spec);

/// Entries of /proc/self/fd, and mappings of files in /proc/self/maps (memfds, devices, files; not
/// anonymous memory): what a run may leave in this process.
size_t openFdsOfThisProcess();
size_t mappingsOfThisProcess();

/// Appends "what: before -> after" to `left` when `before != after`.
void expectSame(std::vector<std::string>& left, const std::string& what, size_t before,
                size_t after);

} // namespace faultsweep

namespace faultsweep {

/// Makes call `name` through `plan`: `make()` runs unless the plan fails it (a releasing call runs
/// anyway); the answer is make()'s or the plan's -errno.
template <typename Make> auto faultable(FaultPlan& plan, const std::string& name, Make&& make) {
    int injected = plan.enter(name);
    if (injected == 0)
        return make();
    if (releasingCall(name))
        (void)make();
    return static_cast<decltype(make())>(injected);
}

/// An ioctl through `plan` as the backends' real kernel interfaces make it: retried while it
/// answers EINTR or EAGAIN, so an injected EINTR or EAGAIN is followed by the call itself.
template <typename Make> int retriedIoctl(FaultPlan& plan, const std::string& name, Make&& make) {
    int r = faultable(plan, name, make);
    if (r == -EINTR || r == -EAGAIN)
        r = make();
    return r;
}

} // namespace faultsweep
