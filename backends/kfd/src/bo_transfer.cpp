#include "kfd/bo_transfer.h"

#include "base/log.h"
#include "base/quiet_thread.h"
#include "topology/topology.h"
#include "kfd/kfd_uapi.h"
#include "sdma/engine.h"

#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <cstdio>

using sdma::Direction;

namespace kfd {
namespace {

constexpr uint64_t kPage = 4096;

/// One BO of a GPU job through the GPU's SDMA engine: imported at its first chunk, released
/// after its last, so a lane holds one import at a time. Only the lane's device stage uses it.
class SdmaPiece final : public hal::ContentSource, public hal::ContentSink {
public:
    SdmaPiece(sdma::Engine& engine, const TransferBo& bo) : engine_(engine), bo_(bo) {}
    ~SdmaPiece() override { engine_.release(std::move(imported_)); }

    hal::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        return copy(Direction::BoToHost, offset, out);
    }
    hal::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        return copy(Direction::HostToBo, offset, {const_cast<std::byte*>(in.data()), in.size()});
    }

private:
    hal::Result<void> copy(Direction dir, uint64_t offset, std::span<std::byte> data) {
        if (!imported_) {
            HAL_TRY_ASSIGN(imported_, engine_.importBo(bo_.dmabufFd, bo_.size));
        }
        auto slot = engine_.slotAt(data.data());
        if (!slot)
            return hal::makeError(hal::ErrorCode::Internal,
                                  "SDMA chunks must start at a staging slot");
        HAL_TRY(engine_.copy(dir, *imported_, offset, *slot, data.size()));
        if (offset + data.size() >= bo_.size)
            engine_.release(std::move(imported_));
        return hal::success();
    }

    sdma::Engine& engine_;
    TransferBo bo_;
    std::unique_ptr<sdma::ImportedBo> imported_;
};

/// How messages name a BO of a job.
std::string boWhat(const TransferBo& bo) {
    return hal::strFormat("BO %u (%s, %llu bytes)", bo.index, boKindName(bo.allocFlags),
                          static_cast<unsigned long long>(bo.size));
}

/// The GPU's SDMA engine over `staging`, split into the lane's slots.
hal::Result<std::unique_ptr<sdma::Engine>> openEngine(KernelInterface& kernel,
                                                      const GpuTransfer& job,
                                                      std::span<std::byte> staging) {
    sdma::EngineOptions options{job.renderPath, hal::gpuIdHex(job.gpuId), hal::kLaneSlots};
    return sdma::Engine::open(kernel.libdrm(), options, staging);
}

/// A lane of GPU `job` over `staging`.
hal::LaneOptions laneFor(const GpuTransfer& job, std::span<std::byte> staging) {
    hal::LaneOptions options;
    options.gpu = "GPU " + hal::gpuIdHex(job.gpuId);
    options.staging = staging;
    options.holes = job.holes;
    return options;
}

} // namespace

hal::Result<void> addBoSize(uint64_t* total, uint64_t size, uint32_t gpuId, size_t index) {
    if (!__builtin_add_overflow(*total, size, total))
        return hal::success();
    return hal::makeError(hal::ErrorCode::Image,
                          "the BOs of GPU %s add up to more than 2^64 bytes (BO %zu: %llu "
                          "bytes): the image is corrupt",
                          hal::gpuIdHex(gpuId).c_str(), index,
                          static_cast<unsigned long long>(size));
}

hal::Result<uint64_t> transferBytes(const GpuTransfer& job) {
    uint64_t total = 0;
    for (const TransferBo& bo : job.bos)
        HAL_TRY(addBoSize(&total, bo.size, job.gpuId, bo.index));
    return total;
}

hal::Result<hal::FramedImage> openPagesFile(hal::ImageStore& store, const std::string& name,
                                            uint32_t gpuId, size_t boCount, uint64_t total) {
    HAL_TRY_ASSIGN_CONTEXT(hal::FramedImage image, hal::openFramedImage(store, name),
                           "the BO contents of GPU %s are missing or unreadable",
                           hal::gpuIdHex(gpuId).c_str());
    std::string whose = hal::strFormat("the %zu VRAM/GTT BOs of GPU %s hold", boCount,
                                       hal::gpuIdHex(gpuId).c_str());
    if (image.announced != total)
        return hal::makeError(hal::ErrorCode::Image,
                              "pages file %s does not belong to its image: its size header says "
                              "%llu bytes, %s %llu",
                              name.c_str(), static_cast<unsigned long long>(image.announced),
                              whose.c_str(), static_cast<unsigned long long>(total));
    HAL_TRY(hal::checkContentsSize(image, total, whose));
    return image;
}

uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers) {
    if (workers == 0)
        workers = 1;
    uint64_t each = totalBytes / workers / (2 * kPage) * (2 * kPage);
    return std::max<uint64_t>(each, 2 * kPage);
}

hal::Result<PagesDigest> dumpGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                         const GpuTransfer& job, uint64_t stagingBytes) {
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    hal::StagingBuffer staging(std::max<uint64_t>(stagingBytes, hal::kLaneSlots * kPage));
    std::unique_ptr<sdma::Engine> engine;
    if (total > 0) {
        HAL_TRY_ASSIGN(engine, openEngine(kernel, job, staging.span()));
    }
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    hal::DumpImage file;
    file.name = job.imageName;
    file.create = [&store, &job, total] {
        return hal::createFramedImage(store, job.imageName, total);
    };
    for (const TransferBo& bo : job.bos) {
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, bo));
        file.pieces.push_back({pieces.back().get(), nullptr, bo.size, boWhat(bo)});
    }
    std::vector<hal::DumpImage> files;
    files.push_back(std::move(file));
    HAL_TRY(hal::runDumpLane(files, laneFor(job, staging.span())));
    pieces.clear(); // before the engine goes
    HAL_LOG_INFO("GPU %s: %llu bytes of BO contents written to %s", hal::gpuIdHex(job.gpuId).c_str(),
                 static_cast<unsigned long long>(total), job.imageName.c_str());
    return PagesDigest{job.gpuId, total, *files[0].checksum};
}

hal::Result<void> restoreGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                     const GpuTransfer& job, std::span<std::byte> staging) {
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    std::unique_ptr<sdma::Engine> engine;
    if (total > 0) {
        HAL_TRY_ASSIGN(engine, openEngine(kernel, job, staging));
    }
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    hal::RestoreImage file;
    file.name = job.imageName;
    file.open = [&store, &job, total] {
        return openPagesFile(store, job.imageName, job.gpuId, job.bos.size(), total);
    };
    for (const TransferBo& bo : job.bos) {
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, bo));
        file.pieces.push_back({nullptr, pieces.back().get(), bo.size, boWhat(bo)});
    }
    file.expected = job.expected;
    std::vector<hal::RestoreImage> files;
    files.push_back(std::move(file));
    HAL_TRY(hal::runRestoreLane(files, laneFor(job, staging)));
    return hal::success();
}

constexpr const char* kJobMagic = "kfd-contents 1";

hal::ContentJob encodeTransferJob(const GpuTransfer& job, uint32_t lanes) {
    hal::ContentJob out;
    out.lane = "GPU " + hal::gpuIdHex(job.gpuId);
    out.lanes = lanes;
    std::string p = hal::strFormat("%s\ngpu %u\n", kJobMagic, job.gpuId);
    p += "render " + job.renderPath + "\nimage " + job.imageName + "\n";
    if (job.expected)
        p += hal::strFormat("checksum %d %llu\n", static_cast<int>(job.expected->kind),
                            static_cast<unsigned long long>(job.expected->value));
    for (const TransferBo& bo : job.bos) {
        p += hal::strFormat("bo %u %llu %u\n", bo.index, static_cast<unsigned long long>(bo.size),
                            bo.allocFlags);
        out.fds.push_back(bo.dmabufFd);
    }
    out.payload = std::move(p);
    return out;
}

hal::Result<GpuTransfer> decodeTransferJob(const hal::ContentJob& in) {
    GpuTransfer job;
    auto bad = [&](const std::string& line) {
        return hal::makeError(hal::ErrorCode::Internal, "a malformed kfd parallel-restore job: %s",
                              line.c_str());
    };
    size_t pos = 0;
    auto nextLine = [&](std::string* line) {
        if (pos >= in.payload.size())
            return false;
        size_t nl = in.payload.find('\n', pos);
        if (nl == std::string::npos)
            nl = in.payload.size();
        *line = in.payload.substr(pos, nl - pos);
        pos = nl + 1;
        return true;
    };
    std::string line;
    if (!nextLine(&line) || line != kJobMagic)
        return bad(line);
    while (nextLine(&line)) {
        unsigned a = 0, c = 0;
        unsigned long long b = 0;
        int kind = 0;
        if (line.rfind("render ", 0) == 0) {
            job.renderPath = line.substr(7);
        } else if (line.rfind("image ", 0) == 0) {
            job.imageName = line.substr(6);
        } else if (sscanf(line.c_str(), "gpu %u", &a) == 1) {
            job.gpuId = a;
        } else if (sscanf(line.c_str(), "checksum %d %llu", &kind, &b) == 2 && kind >= 0 &&
                   kind <= static_cast<int>(hal::DigestKind::Fnv1a64)) {
            job.expected = hal::ContentChecksum{static_cast<hal::DigestKind>(kind), b};
        } else if (sscanf(line.c_str(), "bo %u %llu %u", &a, &b, &c) == 3) {
            if (job.bos.size() >= in.fds.size())
                return bad("more BOs than fds");
            job.bos.push_back({a, b, in.fds[job.bos.size()], c});
        } else {
            return bad(line);
        }
    }
    if (job.bos.size() != in.fds.size() || job.imageName.empty())
        return bad("BOs and fds do not match, or no image");
    return job;
}

hal::Result<std::vector<PagesDigest>> runPerGpu(
    std::vector<std::function<hal::Result<PagesDigest>()>> jobs) {
    std::vector<std::optional<hal::Result<PagesDigest>>> results(jobs.size());
    std::vector<std::thread> threads;
    threads.reserve(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        threads.push_back(hal::quietThread([&, i] { results[i].emplace(jobs[i]()); }));
    for (auto& t : threads)
        t.join();
    std::vector<PagesDigest> digests;
    std::optional<hal::Error> first;
    for (auto& r : results) {
        if (r->ok()) {
            digests.push_back(r->value());
        } else if (!first) {
            first = std::move(r->error());
        } else {
            HAL_LOG_ERROR("%s", r->error().describe().c_str());
        }
    }
    if (first)
        return std::move(*first);
    return digests;
}

} // namespace kfd
