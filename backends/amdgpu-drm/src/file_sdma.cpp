#include "file_sdma.h"

#include "base/log.h"
#include "sdma/packets.h"

#include <libdrm/amdgpu_drm.h>

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace drm {

using base::ErrorCode;
using base::makeError;

namespace {

constexpr uint64_t kPage = 4096;
/// The IB's part of the staging BO (its first page).
constexpr uint64_t kIbBytes = kPage;
/// Windows start at 2 MiB boundaries (the VM's large-fragment size).
constexpr uint64_t kWindowAlign = 2ull << 20;

uint64_t pageAlign(uint64_t n) {
    return (n + kPage - 1) / kPage * kPage;
}

} // namespace

std::optional<uint64_t> freeVaWindow(uint64_t lo, uint64_t hi, uint64_t bytes, uint64_t align,
                                     std::vector<VaSpan> taken) {
    // From the top down: the highest gap below each mapping (highest first), then the lowest.
    std::sort(taken.begin(), taken.end(),
              [](const VaSpan& a, const VaSpan& b) { return a.first > b.first; });
    uint64_t top = hi;
    auto fit = [&](uint64_t floor) -> std::optional<uint64_t> {
        if (top < floor || top - floor < bytes)
            return std::nullopt;
        uint64_t at = (top - bytes) / align * align;
        return at >= floor ? std::optional<uint64_t>(at) : std::nullopt;
    };
    for (const auto& [addr, size] : taken) {
        uint64_t end = addr + size;
        if (end < top)
            if (auto at = fit(std::max(end, lo)))
                return at;
        top = std::min(top, addr);
        if (top <= lo)
            return std::nullopt;
    }
    return fit(lo);
}

FileSdmaBo::FileSdmaBo(KernelInterface& kernel, const FileSdmaTarget& target)
    : kernel_(kernel), calls_(kernel), fd_(target.fd), handle_(target.handle), size_(target.size) {}

base::Result<std::unique_ptr<FileSdmaBo>> FileSdmaBo::open(KernelInterface& kernel,
                                                           const FileSdmaTarget& target) {
    std::unique_ptr<FileSdmaBo> session(new FileSdmaBo(kernel, target));
    HAL_TRY_CONTEXT(session->setUp(target.taken),
                    "while setting up an SDMA copy of BO handle %u on its own file", target.handle);
    return session;
}

base::Result<void> FileSdmaBo::setUp(std::vector<VaSpan> taken) {
    static_assert(sdma::kCopyPacketDwords * 4 * (kChunkBytes / sdma::kMaxCopyBytes + 1) +
                          sdma::kIbAlignDwords * 4 <=
                      kIbBytes,
                  "the IB of one chunk fits its page");
    HAL_TRY_ASSIGN(uint32_t ctx, calls_.ctxAlloc(fd_));
    ctx_ = ctx;
    dataBytes_ = std::min(pageAlign(size_), kChunkBytes);
    stagingBytes_ = kIbBytes + dataBytes_;
    HAL_TRY_ASSIGN(uint32_t staging,
                   calls_.gemCreate(fd_, stagingBytes_, kPage, AMDGPU_GEM_DOMAIN_GTT, 0));
    staging_ = staging;
    HAL_TRY_ASSIGN(uint64_t offset, calls_.mmapOffset(fd_, staging));
    int err = 0;
    void* cpu = kernel_.mmap(fd_, offset, stagingBytes_, PROT_READ | PROT_WRITE, &err);
    if (!cpu)
        return base::makeErrnoError(ErrorCode::Kernel, err,
                                    "mmap of the %llu-byte staging BO (handle %u) failed",
                                    static_cast<unsigned long long>(stagingBytes_), staging);
    stagingCpu_ = static_cast<std::byte*>(cpu);
    return mapWindow(std::move(taken));
}

base::Result<void> FileSdmaBo::mapWindow(std::vector<VaSpan> taken) {
    // libdrm's general VA range (amdgpu_device_initialize takes it from DEV_INFO as well):
    // amdgpu_info_ioctl reports [virtual_address_offset, virtual_address_max) below the hole.
    drm_amdgpu_info_device dev{};
    HAL_TRY(calls_.info(fd_, AMDGPU_INFO_DEV_INFO, &dev, sizeof dev));
    uint64_t boBytes = pageAlign(size_);
    uint64_t need = stagingBytes_ + boBytes;
    for (int attempt = 0; attempt < kWindowTries; ++attempt) {
        auto window = freeVaWindow(dev.virtual_address_offset, dev.virtual_address_max, need,
                                   kWindowAlign, taken);
        if (!window)
            break;
        auto staging = calls_.vaMap(fd_, *staging_, *window, 0, stagingBytes_,
                                    AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE);
        if (staging.ok()) {
            stagingVa_ = *window;
            auto bo = calls_.vaMap(fd_, handle_, *window + stagingBytes_, 0, boBytes,
                                   AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE);
            if (bo.ok()) {
                boVa_ = *window + stagingBytes_;
                return base::success();
            }
            if (bo.error().sysErrno() != EINVAL)
                return std::move(bo).error();
            HAL_TRY(calls_.vaUnmap(fd_, *staging_, *window, 0, stagingBytes_));
            stagingVa_.reset();
        } else if (staging.error().sysErrno() != EINVAL) {
            return std::move(staging).error();
        }
        // Another mapping of the file's VM is in the way (amdgpu_vm_bo_map: EINVAL on overlap)
        // whose extent the kernel does not say: the next window is below twice the last skip.
        uint64_t skip = std::min(kWindowAlign << attempt, *window);
        taken.emplace_back(*window - skip, need + skip);
    }
    return makeError(ErrorCode::Kernel,
                     "no room of %llu bytes found in the GPU VM of the file [0x%llx, 0x%llx) for "
                     "the staging BO and the BO (the kernel refused %d windows)",
                     static_cast<unsigned long long>(need),
                     static_cast<unsigned long long>(dev.virtual_address_offset),
                     static_cast<unsigned long long>(dev.virtual_address_max), kWindowTries);
}

FileSdmaBo::~FileSdmaBo() {
    std::vector<std::string> failed;
    auto note = [&](base::Result<void> r) {
        if (!r.ok())
            failed.push_back(r.error().describe());
    };
    if (boVa_)
        note(calls_.vaUnmap(fd_, handle_, *boVa_, 0, pageAlign(size_)));
    if (stagingVa_)
        note(calls_.vaUnmap(fd_, *staging_, *stagingVa_, 0, stagingBytes_));
    if (stagingCpu_)
        kernel_.munmap(stagingCpu_, stagingBytes_);
    if (staging_)
        note(calls_.gemClose(fd_, *staging_));
    if (ctx_)
        note(calls_.ctxFree(fd_, *ctx_));
    for (const std::string& why : failed)
        HAL_LOG_WARN("releasing the SDMA copy of BO handle %u on its own file: %s", handle_,
                     why.c_str());
}

base::Result<void> FileSdmaBo::copy(bool toBo, uint64_t boOffset, uint64_t bytes) {
    uint64_t data = *stagingVa_ + kIbBytes;
    uint64_t bo = *boVa_ + boOffset;
    std::vector<uint32_t> ib =
        toBo ? sdma::buildLinearCopy(data, bo, bytes) : sdma::buildLinearCopy(bo, data, bytes);
    memcpy(stagingCpu_, ib.data(), ib.size() * sizeof(uint32_t));
    HAL_TRY_ASSIGN(uint64_t seq, calls_.submitSdma(fd_, *ctx_, *stagingVa_,
                                                   static_cast<uint32_t>(ib.size()), {*staging_}));
    HAL_TRY_ASSIGN(bool done,
                   calls_.waitSdma(fd_, *ctx_, seq, kernel_.monotonicNs() + kCopyTimeoutNs));
    if (!done)
        return makeError(ErrorCode::Kernel,
                         "an SDMA copy of BO handle %u did not complete within %llu s: the GPU's "
                         "SDMA engine is hung (see the kernel log for a GPU reset)",
                         handle_, static_cast<unsigned long long>(kCopyTimeoutNs / 1000000000ull));
    return base::success();
}

base::Result<void> FileSdmaBo::read(uint64_t offset, std::span<std::byte> out) {
    if (offset + out.size() > size_)
        return makeError(ErrorCode::Internal, "read beyond the BO's end");
    for (uint64_t done = 0; done < out.size();) {
        uint64_t n = std::min<uint64_t>(dataBytes_, out.size() - done);
        HAL_TRY(copy(false, offset + done, n));
        memcpy(out.data() + done, stagingCpu_ + kIbBytes, n);
        done += n;
    }
    return base::success();
}

base::Result<void> FileSdmaBo::write(uint64_t offset, std::span<const std::byte> in) {
    if (offset + in.size() > size_)
        return makeError(ErrorCode::Internal, "write beyond the BO's end");
    for (uint64_t done = 0; done < in.size();) {
        uint64_t n = std::min<uint64_t>(dataBytes_, in.size() - done);
        memcpy(stagingCpu_ + kIbBytes, in.data() + done, n);
        HAL_TRY(copy(true, offset + done, n));
        done += n;
    }
    return base::success();
}

} // namespace drm
