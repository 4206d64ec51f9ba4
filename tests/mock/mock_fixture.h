#pragma once
/// \file
/// Shared helpers of the mock GPU tests: a mock machine generated in a temporary directory, byte
/// patterns, and checks on base::Result errors.

#include "base/result.h"
#include "hal/device.h"
#include "hal/registry.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "topology/synth.h"

#include "topology/render_node_access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <set>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mocktest {

/// A mock machine initialised (mock::initMachine) from a synthetic topology, in a temporary
/// directory removed afterwards. The constructor fails the test (ADD_FAILURE) when init fails.
class MockMachine {
public:
    /// `gpus` GPUs of `vramBytes` each; gpu_id of GPU i is 0x1000 + i * 0x111.
    explicit MockMachine(unsigned gpus = 1, uint64_t vramBytes = 1ull << 30);
    /// Any synthetic topology.
    explicit MockMachine(const topology::SyntheticSpec& spec);

    /// The mock root (canonical form, as device node paths spell it).
    const std::string& root() const { return root_; }
    /// The temporary directory everything lives in (other files may be put here).
    const testsupport::TempDir& dir() const { return dir_; }
    /// gpu_id of the i-th GPU.
    uint32_t gpuId(unsigned i) const { return 0x1000 + i * 0x111; }
    /// Overwrites machine.conf's budget_bytes (keeping the device numbers).
    void setBudget(uint64_t bytes) const;

private:
    void init(const topology::SyntheticSpec& spec);

    testsupport::TempDir dir_;
    std::string root_;
};

/// A directory playing a container's /dev (mock/device_nodes.h): kfd when `withKfd`, and the
/// render nodes of the machine's GPUs `gpus` (indexes), made as a runtime makes a container's
/// device nodes, with the machine's device numbers.
class DeviceView {
public:
    DeviceView(const MockMachine& m, const std::vector<unsigned>& gpus, bool withKfd = true);
    const std::string& dir() const { return dir_; }
    /// Adds node `name` ("kfd", "dri/renderD130").
    void add(const std::string& name) const;
    /// Takes node `name` away.
    void remove(const std::string& name) const;

private:
    std::string dir_;
    dev_t rdev_ = 0;
};

/// A devices cgroup standing in front of the system's calls: opening a node of a denied render
/// minor fails EPERM, as the kernel answers a process whose cgroup does not give it the device.
class DeviceCgroup final : public topology::DeviceNodeCalls {
public:
    void deny(int renderMinor) { denied_.insert(renderMinor); }
    int statPath(const std::string& path, struct stat* st) override;
    int openNode(const std::string& path) override;
    void closeNode(int fd) override;
    int makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                     gid_t gid) override;
    int unlinkPath(const std::string& path) override;
    int makeDir(const std::string& path, mode_t mode) override;

private:
    std::set<int> denied_;
};

/// The render minor of the machine's `gpu`-th GPU (-1 and a test failure when unreadable).
int renderMinorOf(const MockMachine& m, unsigned gpu);

#ifdef CRIU_AMDGPU_BUILD_BACKEND_DIR
/// The mock backend from CRIU_AMDGPU_BUILD_BACKEND_DIR, probed with `settings`.
class MockBackendLoader {
public:
    explicit MockBackendLoader(const settings::Settings& settings) {
        registry_.discover(CRIU_AMDGPU_BUILD_BACKEND_DIR, settings, hal::HostServices{});
        for (const hal::BackendCandidate& c : registry_.candidates())
            if (c.name == "mock")
                candidate_ = &c;
    }
    const hal::BackendCandidate* candidate() const { return candidate_; }
    hal::Backend* backend() const { return candidate_ ? candidate_->backend : nullptr; }

private:
    hal::BackendRegistry registry_;
    const hal::BackendCandidate* candidate_ = nullptr;
};
#endif

/// An fd closed at the end of a test.
struct Fd {
    int fd = -1;
    ~Fd();
};

/// The first `n` bytes of BO `bo` of the device `fd` (a test failure when they cannot be read).
std::vector<std::byte> readAll(int fd, uint32_t bo, size_t n);

/// `n` bytes of a pattern that depends on `seed`.
std::vector<std::byte> pattern(size_t n, uint8_t seed);

/// criu's FileRef of this process's fd `fd` with criu's file id `id`.
hal::FileRef fileRefOf(int fd, uint32_t id);

/// Number of directories in ROOT/state/contexts.
size_t contextCount(const std::string& root);

/// The text of a failed result's error ("" plus a test failure when it succeeded).
template <typename T> std::string errorText(const base::Result<T>& r) {
    if (r.ok()) {
        ADD_FAILURE() << "expected an error, got success";
        return "";
    }
    return r.error().describe();
}

/// The code of a failed result's error (Internal plus a test failure when it succeeded).
template <typename T> base::ErrorCode errorCode(const base::Result<T>& r) {
    if (r.ok()) {
        ADD_FAILURE() << "expected an error, got success";
        return base::ErrorCode::Internal;
    }
    return r.error().code();
}

/// Asserts a Result succeeded, printing its error otherwise.
#define ASSERT_OK(expr)                                                                            \
    do {                                                                                           \
        auto&& mocktest_r_ = (expr);                                                               \
        ASSERT_TRUE(mocktest_r_.ok()) << mocktest_r_.error().describe();                           \
    } while (0)

/// Declares `decl` from a Result's value, asserting it succeeded.
#define ASSERT_OK_ASSIGN(decl, expr)                                                               \
    auto HAL_CONCAT(mocktest_tmp_, __LINE__) = (expr);                                             \
    ASSERT_TRUE(HAL_CONCAT(mocktest_tmp_, __LINE__).ok())                                          \
        << HAL_CONCAT(mocktest_tmp_, __LINE__).error().describe();                                 \
    decl = std::move(HAL_CONCAT(mocktest_tmp_, __LINE__)).value()

} // namespace mocktest
