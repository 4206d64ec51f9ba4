#pragma once
/// \file
/// The bytes the driver's workload (workload_main.cpp) writes into its buffers, which a second
/// process attached to the driver checks.

#include <cstdint>

namespace kfddriver {

/// The byte at `offset` of the workload's buffer `which` (0 VRAM, 1 GTT, 2 userptr).
inline uint8_t knownByte(int which, uint64_t offset) {
    return static_cast<uint8_t>(
        (offset * 131 + static_cast<uint64_t>(which) * 71 + (offset >> 12)) & 0xff);
}

/// Where in its VRAM buffer the checker writes `kCheckerByte` for the workload to see.
inline constexpr uint64_t kCheckerOffset = 4096 + 17;
inline constexpr uint8_t kCheckerByte = 0xc3;

/// What the workload writes into its queues' doorbells: the AQL queue's (64 bits) and the SDMA
/// queue's (32 bits).
inline constexpr uint64_t kComputeDoorbell = 0x1c0ffee5;
inline constexpr uint32_t kSdmaDoorbell = 0x5d3a;

} // namespace kfddriver
