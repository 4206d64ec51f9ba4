#pragma once
// The device end of a KFD content lane (hal/bo_contents.h: LaneDevice): a GPU's SDMA engine over
// the lane's staging area, and a piece over it for each BO. Internal to the kfd backend
// (contents_lanes.cpp).
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"
#include "kfd/kfd_uapi.h"
#include "sdma/engine.h"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kfd {

/// One BO of a GPU job through the GPU's SDMA engine: imported at its first chunk, released
/// after its last, so a lane holds one import at a time. Only the lane's device stage uses it.
class SdmaPiece final : public content::ContentSource, public content::ContentSink {
public:
    SdmaPiece(sdma::Engine& engine, const TransferBo& bo) : engine_(engine), bo_(bo) {}
    ~SdmaPiece() override { engine_.release(std::move(imported_)); }

    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        return copy(sdma::Direction::BoToHost, offset, out);
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        return copy(sdma::Direction::HostToBo, offset,
                    {const_cast<std::byte*>(in.data()), in.size()});
    }

private:
    base::Result<void> copy(sdma::Direction dir, uint64_t offset, std::span<std::byte> data) {
        if (!imported_) {
            HAL_TRY_ASSIGN(imported_, engine_.importBo(bo_.dmabufFd, bo_.size));
        }
        auto slot = engine_.slotAt(data.data());
        if (!slot)
            return base::makeError(base::ErrorCode::Internal,
                                   "SDMA chunks must start at a staging slot");
        HAL_TRY(engine_.copy(dir, *imported_, offset, *slot, data.size()));
        if (offset + data.size() >= bo_.size)
            engine_.release(std::move(imported_));
        return base::success();
    }

    sdma::Engine& engine_;
    TransferBo bo_;
    std::unique_ptr<sdma::ImportedBo> imported_;
};

/// How messages name a BO of a job.
inline std::string boWhat(const TransferBo& bo) {
    return base::strFormat("BO %u (%s, %llu bytes)", bo.index, boKindName(bo.allocFlags),
                           static_cast<unsigned long long>(bo.size));
}

/// The GPU's SDMA engine over `staging`, split into the lane's slots.
inline base::Result<std::unique_ptr<sdma::Engine>>
openEngine(KernelInterface& kernel, const GpuTransfer& job, std::span<std::byte> staging) {
    sdma::EngineOptions options{job.renderPath, topology::gpuIdHex(job.gpuId), hal::kLaneSlots};
    return sdma::Engine::open(kernel.libdrm(), options, staging);
}

/// The device end of a lane of GPU `job` (hal/bo_contents.h): its SDMA engine over the lane's
/// staging area and a piece over it for each of the job's BOs, dropped before the engine.
class SdmaLaneDevice final : public hal::LaneDevice {
public:
    static base::Result<std::unique_ptr<hal::LaneDevice>>
    open(KernelInterface& kernel, const GpuTransfer& job, std::span<std::byte> staging) {
        auto device = std::unique_ptr<SdmaLaneDevice>(new SdmaLaneDevice());
        HAL_TRY_ASSIGN(device->engine_, openEngine(kernel, job, staging));
        for (const TransferBo& bo : job.bos)
            device->pieces_.push_back(std::make_unique<SdmaPiece>(*device->engine_, bo));
        return std::unique_ptr<hal::LaneDevice>(std::move(device));
    }
    content::ContentSource* source(size_t bo) override { return pieces_.at(bo).get(); }
    content::ContentSink* sink(size_t bo) override { return pieces_.at(bo).get(); }

private:
    SdmaLaneDevice() = default;
    std::unique_ptr<sdma::Engine> engine_;
    std::vector<std::unique_ptr<SdmaPiece>> pieces_; ///< after the engine: dropped before it
};

} // namespace kfd
