#pragma once
/// \file
/// A fake machine the thunk runs on: a fakekfd::TestMachine whose devices are at /dev (the
/// paths libhsakmt opens), its topology generated or read from a captured real tree, routed to
/// by the interposer while the machine lives, with this test process as the KFD process.

#include "fake_routes.h"
#include "kfd_test_machine.h"

#include <hsakmt.h>

#include <functional>
#include <memory>
#include <string>

namespace thunkfake {

/// A generated machine of `gpus` MI210s with gpu_ids from `gpuIdBase`.
std::unique_ptr<fakekfd::TestMachine> generatedMachine(unsigned gpus, uint32_t gpuIdBase = 0x1000);
/// The machine of the captured tree ../shared/fixtures/topology/<name>, or nullptr (with the
/// reason in *why) when the captures are absent.
std::unique_ptr<fakekfd::TestMachine> capturedMachine(const std::string& name, std::string* why);

/// While alive: `machine` serves this process's calls, which is its current KFD process.
class Installed {
public:
    explicit Installed(fakekfd::TestMachine& machine);
    ~Installed();
    Installed(const Installed&) = delete;
    Installed& operator=(const Installed&) = delete;
};

/// Runs `body` in a forked child and expects (gtest) it to finish without a failure within 30 s.
/// The thunk keeps process-wide state past hsaKmtCloseKFD (its render-node fds, for one): each
/// scenario gets a process of its own even when the tests run in one process.
void inFreshProcess(const std::function<void()>& body);

/// Runs `scenario` in a fresh process on the captured machine `name`; skips the test (gtest) where
/// the captures are absent.
void onCapturedMachine(const std::string& name,
                       const std::function<void(fakekfd::TestMachine&)>& scenario);

/// The thunk's node ids of the GPU nodes, in node order (hsaKmtAcquireSystemProperties first).
std::vector<HSAuint32> gpuNodes();

} // namespace thunkfake
