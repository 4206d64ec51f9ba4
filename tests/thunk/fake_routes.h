#pragma once
/// \file
/// Where the C library calls of this test process go while a fake machine is installed: the
/// interposer (libc_interposer.cpp) sends /dev/kfd and render-node opens, and every call on the
/// fds they return, to a fakekfd::FakeKernel, and the KFD topology paths of sysfs to a directory.
/// Nothing is routed while no machine is installed.

#include "fake_kfd.h"
#include "interposer_support.h"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace thunkfake {

/// The fds of the fake kernel are numbered from here (the test process never has this many
/// real fds open), so the interposer tells them apart without asking the fake.
inline constexpr int kFakeFdBase = 1000;

/// A mapping of a fake file that the process made (as /proc/PID/maps shows it to criu).
struct FakeMapping {
    uint64_t addr = 0;
    uint64_t len = 0;
    int prot = 0;
    int flags = 0;
    int fd = -1; ///< the task's fd it was mapped from
    uint64_t offset = 0;
    std::string path; ///< /dev/kfd or /dev/dri/renderD<minor>
};

/// Routes this process's calls to `kernel` (its devRoot must be "/dev") and the KFD topology
/// under /sys to `sysfsRoot` (a directory holding nodes/).
void install(std::shared_ptr<fakekfd::FakeKernel> kernel, const std::string& sysfsRoot);
/// Routes nothing any more.
void uninstall();
/// The installed kernel (nullptr when none).
fakekfd::FakeKernel* kernel();
/// The mappings of fake files alive now, in address order.
std::vector<FakeMapping> mappings();
/// Forgets every recorded mapping (the process's view is being replaced).
void forgetMappings();
/// Records a mapping made on the process's behalf (a restore re-mapping its VMAs).
void recordMapping(const FakeMapping& m);

/// The next definition of the C function `name` after this executable's.
using kfdinterpose::nextDefinition;

/// The sysfs path `path` is routed to, or `path` itself.
std::string routedPath(const std::string& path);

} // namespace thunkfake
