#pragma once
/// \file
/// What a ROCm runtime does with the thunk at start and during a run, on one GPU node: VRAM and
/// GTT allocations mapped to the GPU, a userptr registration, an AQL compute queue and an SDMA
/// queue on rings of its own, a signal event, known bytes written into every buffer.

#include "fake_kfd.h"

#include <hsakmt.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace thunkfake {

/// The byte a workload writes at `offset` of its buffer `which` (0 VRAM, 1 GTT, 2 userptr).
uint8_t knownByte(int which, uint64_t offset);

struct Workload {
    HSAuint32 node = 0;
    static constexpr HSAuint64 kVramSize = 2 << 20;
    static constexpr HSAuint64 kGttSize = 64 << 10;
    static constexpr HSAuint64 kUserptrSize = 256 << 10;
    static constexpr HSAuint64 kRingSize = 64 << 10;
    void* vram = nullptr;
    void* gtt = nullptr;
    void* userptr = nullptr; ///< plain process memory (aligned_alloc), registered with the GPU
    void* computeRing = nullptr;
    void* sdmaRing = nullptr;
    uint64_t aqlIndexes[2] =
        {}; ///< the AQL queue's read and write dispatch ids (ROCr's amd_queue_t)
    HsaQueueResource compute{};
    HsaQueueResource sdma{};
    HsaEvent* event = nullptr;
};

/// Runs the workload on GPU node `node` (gtest assertions: check HasFatalFailure after).
void startWorkload(HSAuint32 node, Workload* w);
/// Expects (gtest) every buffer of `w` to hold its known bytes, read through the thunk's
/// pointers.
void expectKnownBytes(const Workload& w);
/// Signals the workload's event and waits for it (gtest expectations).
void expectEventWorks(const Workload& w);
/// Destroys the queues and the event, unmaps and frees the memory (gtest expectations: each
/// call succeeds, which needs the kernel to know every handle and id the thunk holds).
void stopWorkload(Workload* w);

/// Opens KFD and runs the workload on every GPU node, one Workload each (`work` has as many as
/// the machine has GPUs), and leaves the first one's event signaled: its state travels in a
/// checkpoint (gtest assertions: check HasFatalFailure after).
void startOnEveryGpu(std::vector<Workload>* work);
/// A restored process carries on: it reads every buffer's known bytes, rings its doorbells,
/// finds the first event still signaled and signals the second's (gtest expectations).
void expectCarriesOn(std::vector<Workload>& work);
/// Stops every workload and closes KFD; expects (gtest) the process on `k` left without queues
/// and events and no ioctl unserved.
void expectStopsCleanly(std::vector<Workload>& work, fakekfd::FakeKernel& k);

} // namespace thunkfake
