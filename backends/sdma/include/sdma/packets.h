#pragma once
/// \file
/// SDMA packets for linear copies (gfx9 and newer, SDMA 4.x+), as the kernel's
/// sdma_v4_0_emit_copy_buffer encodes them:
///   DW0 header: op COPY (1) | sub-op LINEAR (0) << 8
///   DW1 count:  byte count - 1 (SDMA 4+; the field is 22 bits wide)
///   DW2 parameters (endian swap): 0
///   DW3/DW4 source GPU VA low/high, DW5/DW6 destination GPU VA low/high.
/// Copies are split into packets of at most 2 MiB (as CRIU's plugin does) and an IB is padded
/// with NOPs to a multiple of 8 dwords.

#include <cstdint>
#include <vector>

namespace sdma {

/// NOP opcode.
inline constexpr uint32_t kOpNop = 0;
/// COPY opcode.
inline constexpr uint32_t kOpCopy = 1;
/// COPY's LINEAR sub-opcode.
inline constexpr uint32_t kSubOpCopyLinear = 0;
/// Dwords of one COPY_LINEAR packet.
inline constexpr uint32_t kCopyPacketDwords = 7;
/// Largest copy one packet carries.
inline constexpr uint64_t kMaxCopyBytes = 1ull << 21;
/// Width of the count field on SDMA 4+ (bits 0..21).
inline constexpr uint32_t kCountMask = (1u << 22) - 1;
/// IBs are padded to a multiple of this many dwords.
inline constexpr uint32_t kIbAlignDwords = 8;

/// SDMA packet header dword.
constexpr uint32_t header(uint32_t op, uint32_t subOp) {
    return ((subOp & 0xff) << 8) | (op & 0xff);
}

/// The IB copying `bytes` from GPU VA `src` to `dst`: COPY_LINEAR packets split at
/// kMaxCopyBytes, NOP-padded to kIbAlignDwords; empty when `bytes` is 0.
std::vector<uint32_t> buildLinearCopy(uint64_t src, uint64_t dst, uint64_t bytes);

/// Dwords the IB of one contiguous copy of at most `bytes` needs, padding included (at least
/// one aligned block).
uint32_t ibDwordsFor(uint64_t bytes);

} // namespace sdma
