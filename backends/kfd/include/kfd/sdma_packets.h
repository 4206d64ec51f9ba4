#pragma once
/// \file
/// SDMA packets for linear copies (gfx9 and newer, SDMA 4.x+), as the kernel's
/// sdma_v4_0_emit_copy_buffer encodes them:
///   DW0 header: op COPY (1) | sub-op LINEAR (0) << 8
///   DW1 count:  byte count - 1 (SDMA 4+; the field is 22 bits wide, so at most 4 MiB)
///   DW2 parameters (endian swap): 0
///   DW3/DW4 source GPU VA low/high, DW5/DW6 destination GPU VA low/high.
/// This backend splits copies into packets of at most 2 MiB (as CRIU's plugin does), well inside
/// the count field, and pads each IB with NOPs to a multiple of 8 dwords.

#include <cstdint>
#include <vector>

namespace kfd {

inline constexpr uint32_t kSdmaOpNop = 0;
inline constexpr uint32_t kSdmaOpCopy = 1;
inline constexpr uint32_t kSdmaSubOpCopyLinear = 0;
/// Dwords of one COPY_LINEAR packet.
inline constexpr uint32_t kSdmaCopyPacketDwords = 7;
/// Largest copy one packet carries here.
inline constexpr uint64_t kSdmaMaxCopyBytes = 1ull << 21;
/// Width of the count field on SDMA 4+ (bits 0..21).
inline constexpr uint32_t kSdmaCountMask = (1u << 22) - 1;
/// IBs are padded to a multiple of this many dwords.
inline constexpr uint32_t kSdmaIbAlignDwords = 8;

/// SDMA packet header dword.
constexpr uint32_t sdmaHeader(uint32_t op, uint32_t subOp) {
    return ((subOp & 0xff) << 8) | (op & 0xff);
}

/// Appends COPY_LINEAR packets copying `bytes` from GPU VA `src` to `dst` (split at
/// kSdmaMaxCopyBytes).
void appendSdmaCopy(std::vector<uint32_t>& ib, uint64_t src, uint64_t dst, uint64_t bytes);
/// Pads `ib` with NOPs to a multiple of kSdmaIbAlignDwords.
void padSdmaIb(std::vector<uint32_t>& ib);
/// Dwords an IB copying at most `bytes` (in one contiguous copy) needs, padding included.
uint32_t sdmaIbDwordsFor(uint64_t bytes);

} // namespace kfd
