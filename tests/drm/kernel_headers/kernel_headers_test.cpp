// Every struct size, field offset, ioctl number and constant of the kernel uapi the project
// declares itself (backends/amdgpu-drm/src/uapi.h) or takes from the build machine's headers
// (libdrm's amdgpu_drm.h and drm.h, bookworm's <linux/kfd_ioctl.h> for the KFD backend) equals
// what the kernel's own headers say (CRIU_AMDGPU_KERNEL_HEADERS: Debian sid's linux-libc-dev,
// obtained by scripts/get-kernel-headers.sh).
#include "facts.h"

#include "kfd/kfd_uapi.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace uapifacts {
namespace {

std::string hex(uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

TEST(KernelHeaders, BothTablesHoldEveryFact) {
    std::vector<std::string> mine, kernel;
    for (const auto& [name, value] : projectFacts())
        mine.push_back(name);
    for (const auto& [name, value] : kernelFacts())
        kernel.push_back(name);
    EXPECT_EQ(mine, kernel);
    EXPECT_GT(mine.size(), 150u);
}

/// _IOC_SIZE of an ioctl number (asm-generic/ioctl.h: 14 bits from bit 16).
uint64_t ioctlSize(uint64_t request) {
    return (request >> 16) & 0x3fff;
}

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(KernelHeaders, EverySizeOffsetAndNumberTheProjectUsesIsTheKernels) {
    Facts kernel = kernelFacts();
    for (const auto& [name, value] : projectFacts()) {
        auto it = kernel.find(name);
        ASSERT_NE(it, kernel.end()) << name << " is not in the kernel's table";
        std::string says = "the project says 0x" + hex(value) + ", the kernel's headers (" +
                           kernelHeadersVersion() + ") 0x" + hex(it->second);
        if (!endsWith(name, kPrefixMark)) {
            EXPECT_EQ(value, it->second) << name << ": " << says;
        } else if (endsWith(name, ".sizeof" kPrefixMark)) {
            EXPECT_LE(value, it->second) << name << ": " << says;
        } else {
            EXPECT_EQ(value & ~(0x3fffull << 16), it->second & ~(0x3fffull << 16))
                << name << ": another direction, type or number: " << says;
            EXPECT_LE(ioctlSize(value), ioctlSize(it->second)) << name << ": " << says;
        }
    }
}

TEST(KernelHeaders, TheKernelsKfdIoctlVersionHasWhatTheKfdBackendNeeds) {
    auto [major, minor] = kernelKfdVersion();
    EXPECT_EQ(major, kfd::kMinKfdMajor);
    EXPECT_GE(minor, kfd::kMinKfdMinor) << kernelHeadersVersion();
    RecordProperty("kfd_ioctl_version", std::to_string(major) + "." + std::to_string(minor));
}

} // namespace
} // namespace uapifacts
