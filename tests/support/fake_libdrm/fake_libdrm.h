#pragma once
/// \file
/// A stateful fake of the libdrm_amdgpu calls of sdma::Libdrm, shared by every backend's tests:
/// devices (one per GPU however many fds, as libdrm's fd_compare does), imported, userptr and
/// GTT BOs, a VA manager and a VM per device, contexts, BO lists, and an SDMA engine that parses
/// the IBs it is given and executes COPY_LINEAR packets between imported BOs and user memory
/// when a fence is waited for. What render fds and dmabufs are comes from the test's own fake
/// kernel through Host.

#include "sdma/libdrm.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace fakesdma {

/// One COPY_LINEAR packet of an SDMA IB.
struct LinearCopy {
    uint64_t src = 0;
    uint64_t dst = 0;
    uint64_t bytes = 0;
};

/// The COPY_LINEAR packets of an IB of SDMA 4+ (NOPs skipped) into `out`; empty when the IB is
/// well formed, else what is wrong with it (its size not a multiple of 8 dwords, an unknown or
/// truncated packet, a count wider than 22 bits, nonzero parameters).
std::string parseIb(std::span<const uint32_t> ib, std::vector<LinearCopy>* out);

/// The memory behind an imported BO.
class Memory {
public:
    virtual ~Memory() = default;
    /// Bytes the BO holds.
    virtual uint64_t size() const = 0;
    /// Copies [offset, offset + out.size()) of the BO into `out` (within size()).
    virtual void read(uint64_t offset, std::span<std::byte> out) = 0;
    /// Stores `in` at `offset` of the BO (within size()).
    virtual void write(uint64_t offset, std::span<const std::byte> in) = 0;
};

/// Plain bytes somewhere (a fake kernel's BO storage).
class BytesMemory final : public Memory {
public:
    /// `bytes` stays valid while `owner` (if any) lives.
    BytesMemory(std::byte* bytes, uint64_t size, std::shared_ptr<const void> owner = {})
        : bytes_(bytes), size_(size), owner_(std::move(owner)) {}
    uint64_t size() const override { return size_; }
    void read(uint64_t offset, std::span<std::byte> out) override;
    void write(uint64_t offset, std::span<const std::byte> in) override;

private:
    std::byte* bytes_;
    uint64_t size_;
    std::shared_ptr<const void> owner_;
};

/// What the test's fake kernel answers for the fake libdrm.
class Host {
public:
    virtual ~Host() = default;
    /// open(2) of a render node: an fd or -errno.
    virtual int openRenderNode(const std::string& path) = 0;
    /// close(2): 0 or -errno.
    virtual int closeRenderNode(int fd) = 0;
    /// The GPU (any key of the test's choosing) whose render node `fd` is, or -errno.
    virtual int64_t gpuOfRenderFd(int fd) = 0;
    /// The memory of the BO behind dmabuf `fd`, importable on `gpu`, or -errno.
    virtual int importDmabuf(int64_t gpu, int fd, std::shared_ptr<Memory>* memory) = 0;
    /// A BO was mapped at `va` in the VM of the device first initialised on `fd`.
    virtual void mapped(int fd, uint64_t va, uint64_t size) { (void)fd, (void)va, (void)size; }
    /// One COPY_LINEAR packet of `bytes` ran on `gpu`, into a BO when `toBo`.
    virtual void copied(int64_t gpu, bool toBo, uint64_t bytes) {
        (void)gpu, (void)toBo, (void)bytes;
    }
};

/// The fake libdrm.
class FakeLibdrm final : public sdma::Libdrm {
public:
    /// `vaBase`: where the (bump) VA manager of each device starts.
    explicit FakeLibdrm(Host& host, uint64_t vaBase = 0x400000000ull);
    ~FakeLibdrm() override;

    // ------------------------------------------------------------------- test controls
    /// Makes the `nth` next call of the Libdrm method `name` fail with -err ("boVaOp:unmap" for
    /// unmapping).
    void failCall(const std::string& name, int err, int nth = 1);
    /// Fences never signal (a hung engine).
    void hang(bool on);
    /// Live devices, BOs, VA ranges, contexts and lists (0 after a clean teardown).
    size_t liveObjects();
    /// Largest userptr registration, and the peak of concurrently registered userptr bytes.
    uint64_t largestUserptr();
    /// Peak of concurrently registered userptr bytes.
    uint64_t peakUserptr();
    /// COPY_LINEAR packets executed.
    uint64_t copyPackets();
    /// GPU faults seen (bad IBs, copies outside the submission's BOs, BOs freed while mapped).
    std::vector<std::string> faults();

    // ------------------------------------------------------------------------- Libdrm
    int openRenderNode(const std::string& path) override;
    int closeRenderNode(int fd) override;
    int deviceInitialize(int fd, sdma::Device* dev) override;
    int deviceDeinitialize(sdma::Device dev) override;
    int boImportDmabuf(sdma::Device dev, int dmabufFd, sdma::Bo* bo, uint64_t* size) override;
    int boFromUserMem(sdma::Device dev, void* cpu, uint64_t size, sdma::Bo* bo) override;
    int boAllocGtt(sdma::Device dev, uint64_t size, sdma::Bo* bo) override;
    int boCpuMap(sdma::Bo bo, void** cpu) override;
    int boCpuUnmap(sdma::Bo bo) override;
    int boFree(sdma::Bo bo) override;
    int vaRangeAlloc(sdma::Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                     sdma::VaRange* range) override;
    int vaRangeFree(sdma::VaRange range) override;
    int boVaOp(sdma::Bo bo, uint64_t size, uint64_t va, bool map) override;
    int ctxCreate(sdma::Device dev, sdma::Context* ctx) override;
    int ctxFree(sdma::Context ctx) override;
    int boListCreate(sdma::Device dev, const std::vector<sdma::Bo>& bos,
                     sdma::BoList* list) override;
    int boListDestroy(sdma::BoList list) override;
    int submitSdma(sdma::Context ctx, sdma::BoList list, uint64_t ibVa, uint32_t ibDwords,
                   uint64_t* seq) override;
    int waitFence(sdma::Context ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) override;

private:
    struct Dev;
    struct BoObj;
    struct Range;
    struct Ctx;
    struct List;
    struct Job;

    int injected(const std::string& name);
    BoObj* resolve(Dev& dev, uint64_t va, uint64_t bytes, const std::vector<uintptr_t>& allowed,
                   uint64_t* offset);
    /// The BO mapped at `va` and how many of `bytes` from there it holds (0: nothing mapped).
    BoObj* resolvePrefix(Dev& dev, uint64_t va, uint64_t bytes,
                         const std::vector<uintptr_t>& allowed, uint64_t* offset, uint64_t* mapped);
    std::string execute(Dev& dev, const Job& job);
    std::string executeCopy(Dev& dev, const Job& job, const LinearCopy& copy);

    Host& host_;
    uint64_t vaBase_;
    std::mutex mu_;
    std::map<std::string, std::pair<int, int>> faults_; ///< name -> (countdown, errno)
    bool hang_ = false;
    uintptr_t nextHandle_ = 1;
    std::map<uintptr_t, std::shared_ptr<Dev>> devs_;
    std::map<int64_t, uintptr_t> devOfGpu_;
    std::map<uintptr_t, std::shared_ptr<BoObj>> bos_;
    std::map<uintptr_t, std::shared_ptr<Range>> ranges_;
    std::map<uintptr_t, std::shared_ptr<Ctx>> ctxs_;
    std::map<uintptr_t, std::shared_ptr<List>> lists_;
    uint64_t liveUserptr_ = 0;
    uint64_t largestUserptr_ = 0;
    uint64_t peakUserptr_ = 0;
    uint64_t copyPackets_ = 0;
    std::vector<std::string> gpuFaults_;
};

} // namespace fakesdma
