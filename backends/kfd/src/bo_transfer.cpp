#include "kfd/bo_transfer.h"

#include "hal/log.h"
#include "hal/topology.h"
#include "kfd/kfd_uapi.h"
#include "sdma/engine.h"

#include <map>
#include <memory>
#include <optional>
#include <thread>

using sdma::Direction;

namespace kfd {
namespace {

constexpr uint64_t kPage = 4096;

struct Chunk {
    size_t bo = 0; ///< index into job.bos
    uint64_t offset = 0;
    uint64_t length = 0;
    bool lastOfBo = false;
};

std::vector<Chunk> planChunks(const GpuTransfer& job, uint64_t chunkBytes) {
    std::vector<Chunk> chunks;
    for (size_t b = 0; b < job.bos.size(); ++b) {
        uint64_t size = job.bos[b].size;
        for (uint64_t off = 0; off < size; off += chunkBytes) {
            Chunk c;
            c.bo = b;
            c.offset = off;
            c.length = std::min(chunkBytes, size - off);
            c.lastOfBo = off + c.length >= size;
            chunks.push_back(c);
        }
    }
    return chunks;
}

/// The BOs a pipeline has imported, and the copy in flight: on any exit the copy is waited for
/// (the staging buffer must not go away under the GPU) and every BO is released.
class Pipeline {
public:
    Pipeline(sdma::Engine& engine, const GpuTransfer& job) : engine_(engine), job_(job) {}
    ~Pipeline() {
        if (inflight_)
            (void)engine_.wait(*inflight_);
        for (auto& [index, bo] : imported_)
            engine_.release(std::move(bo));
    }

    std::string where(const Chunk& c) const {
        const TransferBo& bo = job_.bos[c.bo];
        return hal::strFormat("while copying bytes %llu..%llu of BO %u (%s, %llu bytes) of GPU %s",
                              static_cast<unsigned long long>(c.offset),
                              static_cast<unsigned long long>(c.offset + c.length), bo.index,
                              boKindName(bo.allocFlags), static_cast<unsigned long long>(bo.size),
                              hal::gpuIdHex(job_.gpuId).c_str());
    }

    hal::Result<void> submit(Direction dir, const Chunk& c, uint32_t half) {
        auto it = imported_.find(c.bo);
        if (it == imported_.end()) {
            const TransferBo& tb = job_.bos[c.bo];
            HAL_TRY_ASSIGN_CONTEXT(auto bo, engine_.importBo(tb.dmabufFd, tb.size), "%s",
                                   where(c).c_str());
            it = imported_.emplace(c.bo, std::move(bo)).first;
        }
        HAL_TRY_ASSIGN_CONTEXT(uint64_t seq,
                               engine_.submitCopy(dir, *it->second, c.offset, half, c.length),
                               "%s", where(c).c_str());
        inflight_ = seq;
        inflightChunk_ = c;
        return hal::success();
    }

    hal::Result<void> waitInflight() {
        if (!inflight_)
            return hal::success();
        uint64_t seq = *inflight_;
        inflight_.reset();
        HAL_TRY_CONTEXT(engine_.wait(seq), "%s", where(inflightChunk_).c_str());
        if (inflightChunk_.lastOfBo) {
            auto it = imported_.find(inflightChunk_.bo);
            engine_.release(std::move(it->second));
            imported_.erase(it);
        }
        return hal::success();
    }

private:
    sdma::Engine& engine_;
    const GpuTransfer& job_;
    std::map<size_t, std::unique_ptr<sdma::ImportedBo>> imported_;
    std::optional<uint64_t> inflight_;
    Chunk inflightChunk_;
};

/// The GPU's SDMA engine with a staging buffer of two halves: one fills while the other drains.
hal::Result<std::unique_ptr<sdma::Engine>> openEngine(KernelInterface& kernel,
                                                      const GpuTransfer& job,
                                                      uint64_t stagingBytes) {
    sdma::EngineOptions options{job.renderPath, hal::gpuIdHex(job.gpuId), 2};
    return sdma::Engine::open(kernel.libdrm(), options, stagingBytes);
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
    PagesDigest digest;
    digest.gpuId = job.gpuId;
    hal::Fnv1a64 fnv;
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    HAL_TRY_ASSIGN(auto writer, hal::createFramedImage(store, job.imageName, total));
    if (total > 0) {
        HAL_TRY_ASSIGN(auto engine, openEngine(kernel, job, stagingBytes));
        std::vector<Chunk> chunks = planChunks(job, engine->slotSize());
        Pipeline pipe(*engine, job);
        if (!chunks.empty())
            HAL_TRY(pipe.submit(Direction::BoToHost, chunks[0], 0));
        for (size_t i = 0; i < chunks.size(); ++i) {
            HAL_TRY(pipe.waitInflight());
            // Start the next copy into the other half before writing this one out.
            if (i + 1 < chunks.size())
                HAL_TRY(pipe.submit(Direction::BoToHost, chunks[i + 1],
                                    static_cast<uint32_t>((i + 1) % 2)));
            auto data = engine->slot(static_cast<uint32_t>(i % 2)).first(chunks[i].length);
            fnv.update(data);
            HAL_TRY_CONTEXT(writer->write(data), "%s", pipe.where(chunks[i]).c_str());
            digest.size += chunks[i].length;
        }
    }
    HAL_TRY(writer->close());
    digest.fnv1a64 = fnv.value();
    HAL_LOG_INFO("GPU %s: %llu bytes of BO contents written to %s", hal::gpuIdHex(job.gpuId).c_str(),
                 static_cast<unsigned long long>(digest.size), job.imageName.c_str());
    return digest;
}

hal::Result<PagesDigest> restoreGpuContents(KernelInterface& kernel, hal::ImageStore& store,
                                            const GpuTransfer& job, uint64_t stagingBytes) {
    PagesDigest digest;
    digest.gpuId = job.gpuId;
    hal::Fnv1a64 fnv;
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    HAL_TRY_ASSIGN(hal::FramedImage image,
                   openPagesFile(store, job.imageName, job.gpuId, job.bos.size(), total));
    if (total > 0) {
        HAL_TRY_ASSIGN(auto engine, openEngine(kernel, job, stagingBytes));
        std::vector<Chunk> chunks = planChunks(job, engine->slotSize());
        Pipeline pipe(*engine, job);
        for (size_t i = 0; i < chunks.size(); ++i) {
            // Read this chunk into its half while the previous copy runs from the other half.
            auto data = engine->slot(static_cast<uint32_t>(i % 2)).first(chunks[i].length);
            HAL_TRY_CONTEXT(image.reader->readExact(data), "%s", pipe.where(chunks[i]).c_str());
            fnv.update(data);
            digest.size += chunks[i].length;
            HAL_TRY(pipe.waitInflight());
            HAL_TRY(pipe.submit(Direction::HostToBo, chunks[i], static_cast<uint32_t>(i % 2)));
        }
        HAL_TRY(pipe.waitInflight());
    }
    HAL_TRY(hal::expectImageEnd(image, total));
    digest.fnv1a64 = fnv.value();
    return digest;
}

hal::Result<std::vector<PagesDigest>> runPerGpu(
    std::vector<std::function<hal::Result<PagesDigest>()>> jobs) {
    std::vector<std::optional<hal::Result<PagesDigest>>> results(jobs.size());
    std::vector<std::thread> threads;
    threads.reserve(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        threads.emplace_back([&, i] { results[i].emplace(jobs[i]()); });
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
