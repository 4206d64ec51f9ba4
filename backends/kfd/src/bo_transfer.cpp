#include "kfd/bo_transfer.h"

#include "sdma_lane.h"

#include "base/at_once.h"
#include "base/log.h"
#include "formats/chunk_map.h"
#include "formats/packed_image.h"
#include "kfd/kfd_uapi.h"
#include "sdma/engine.h"
#include "topology/topology.h"

#include <map>
#include <memory>
#include <optional>

#include <cstdio>

using sdma::Direction;

namespace kfd {

base::Result<void> addBoSize(uint64_t* total, uint64_t size, uint32_t gpuId, size_t index) {
    if (!__builtin_add_overflow(*total, size, total))
        return base::success();
    return base::makeError(base::ErrorCode::Image,
                           "the BOs of GPU %s add up to more than 2^64 bytes (BO %zu: %llu "
                           "bytes): the image is corrupt",
                           topology::gpuIdHex(gpuId).c_str(), index,
                           static_cast<unsigned long long>(size));
}

base::Result<uint64_t> transferBytes(const GpuTransfer& job) {
    uint64_t total = 0;
    for (const TransferBo& bo : job.bos)
        HAL_TRY(addBoSize(&total, bo.size, job.gpuId, bo.index));
    return total;
}

base::Result<formats::FramedImage> openPagesFile(formats::ImageStore& store,
                                                 const std::string& name, uint32_t gpuId,
                                                 size_t boCount, uint64_t total) {
    // Through the contents' open: never encrypted, a pages file is refused where the checkpoint
    // is, or where a private key is set (formats/content_keys.h), whatever contents_layout says.
    HAL_TRY_ASSIGN_CONTEXT(formats::FramedImage image, formats::openContentsImage(store, name),
                           "the BO contents of GPU %s are missing or unreadable",
                           topology::gpuIdHex(gpuId).c_str());
    std::string whose = base::strFormat("the %zu VRAM/GTT BOs of GPU %s hold", boCount,
                                        topology::gpuIdHex(gpuId).c_str());
    if (image.announced != total)
        return base::makeError(base::ErrorCode::Image,
                               "pages file %s does not belong to its image: its size header says "
                               "%llu bytes, %s %llu",
                               name.c_str(), static_cast<unsigned long long>(image.announced),
                               whose.c_str(), static_cast<unsigned long long>(total));
    HAL_TRY(formats::checkContentsSize(image, total, whose));
    return image;
}

uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers) {
    if (workers == 0)
        workers = 1;
    uint64_t each = totalBytes / workers / (2 * kPage) * (2 * kPage);
    return std::max<uint64_t>(each, 2 * kPage);
}

uint64_t stagingForJob(uint64_t each, const GpuTransfer& job) {
    // Whole incremental chunks per slot: a smaller job's lane records the chunks a full share's
    // would (datapath/image_increment.h), so a parent and its child dump agree on them.
    const uint64_t unit = datapath::kLaneSlots * formats::kDefaultIncrementChunk;
    uint64_t bytes = 0;
    for (const TransferBo& bo : job.bos)
        if (__builtin_add_overflow(bytes, bo.size, &bytes) || bytes >= each)
            return each; // the job fills its whole share
    return std::min(each, std::max<uint64_t>((bytes + unit - 1) / unit * unit, unit));
}

uint64_t pagesStagingForJob(uint64_t each, const GpuTransfer& job) {
    uint64_t largest = 0;
    for (const TransferBo& bo : job.bos)
        largest = std::max(largest, bo.size);
    uint64_t slot = (largest / datapath::kLaneSlots + kPage - 1) / kPage * kPage;
    slot = std::max(slot, kMinPagesSlot);
    return std::min(stagingForJob(each, job), slot * datapath::kLaneSlots);
}

base::Result<PagesDigest> dumpGpuContents(KernelInterface& kernel, formats::ImageStore& store,
                                          const GpuTransfer& job, uint64_t stagingBytes) {
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    content::StagingBuffer staging(std::max<uint64_t>(stagingBytes, datapath::kLaneSlots * kPage));
    std::unique_ptr<sdma::Engine> engine;
    if (total > 0) {
        HAL_TRY_ASSIGN(engine, openEngine(kernel, job, staging.span()));
    }
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    datapath::DumpImage file;
    file.name = job.imageName;
    file.create = [&store, &job, total] {
        return formats::createFramedImage(store, job.imageName, total);
    };
    for (const TransferBo& bo : job.bos) {
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, bo));
        file.pieces.push_back({pieces.back().get(), nullptr, bo.size, boWhat(bo)});
    }
    std::vector<datapath::DumpImage> files;
    files.push_back(std::move(file));
    HAL_TRY(datapath::runDumpLane(files, laneFor(job, staging.span())));
    pieces.clear(); // before the engine goes
    HAL_LOG_INFO("GPU %s: %llu bytes of BO contents written to %s",
                 topology::gpuIdHex(job.gpuId).c_str(), static_cast<unsigned long long>(total),
                 job.imageName.c_str());
    return PagesDigest{job.gpuId, total, *files[0].checksum};
}

base::Result<void> restoreGpuContents(KernelInterface& kernel, formats::ImageStore& store,
                                      const GpuTransfer& job, std::span<std::byte> staging) {
    HAL_TRY_ASSIGN(uint64_t total, transferBytes(job));
    std::unique_ptr<sdma::Engine> engine;
    if (total > 0) {
        HAL_TRY_ASSIGN(engine, openEngine(kernel, job, staging));
    }
    std::vector<std::unique_ptr<SdmaPiece>> pieces;
    datapath::RestoreImage file;
    file.name = job.imageName;
    file.open = [&store, &job, total] {
        return openPagesFile(store, job.imageName, job.gpuId, job.bos.size(), total);
    };
    for (const TransferBo& bo : job.bos) {
        pieces.push_back(std::make_unique<SdmaPiece>(*engine, bo));
        file.pieces.push_back({nullptr, pieces.back().get(), bo.size, boWhat(bo)});
    }
    file.expected = job.expected;
    std::vector<datapath::RestoreImage> files;
    files.push_back(std::move(file));
    HAL_TRY(datapath::runRestoreLane(files, laneFor(job, staging)));
    return base::success();
}

constexpr const char* kJobMagic = "kfd-contents 1";

coordination::ContentJob encodeTransferJob(const GpuTransfer& job, uint32_t lanes) {
    coordination::ContentJob out;
    out.lane = "GPU " + topology::gpuIdHex(job.gpuId);
    out.lanes = lanes;
    std::string p = base::strFormat("%s\ngpu %u\n", kJobMagic, job.gpuId);
    p += "render " + job.renderPath + "\nimage " + job.imageName + "\n";
    if (job.expected)
        p += base::strFormat("checksum %d %llu\n", static_cast<int>(job.expected->kind),
                             static_cast<unsigned long long>(job.expected->value));
    if (job.perBo)
        p += base::strFormat("perbo %u\n", job.fileId);
    for (const TransferBo& bo : job.bos) {
        // The BO's own checksum kind: -1 when none.
        int kind = bo.expected ? static_cast<int>(bo.expected->kind) : -1;
        p += base::strFormat("bo %u %llu %u %llu %d %llu\n", bo.index,
                             static_cast<unsigned long long>(bo.size), bo.allocFlags,
                             static_cast<unsigned long long>(bo.va), kind,
                             static_cast<unsigned long long>(bo.expected ? bo.expected->value : 0));
        out.fds.push_back(bo.dmabufFd);
    }
    out.payload = std::move(p);
    return out;
}

base::Result<GpuTransfer> decodeTransferJob(const coordination::ContentJob& in) {
    GpuTransfer job;
    auto bad = [&](const std::string& line) {
        return base::makeError(base::ErrorCode::Internal,
                               "a malformed kfd parallel-restore job: %s", line.c_str());
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
        unsigned long long b = 0, va = 0, sum = 0;
        int kind = 0;
        auto validKind = [](int k) {
            return k >= 0 && k <= static_cast<int>(content::DigestKind::Fnv1a64);
        };
        if (line.rfind("render ", 0) == 0) {
            job.renderPath = line.substr(7);
        } else if (line.rfind("image ", 0) == 0) {
            job.imageName = line.substr(6);
        } else if (sscanf(line.c_str(), "gpu %u", &a) == 1) {
            job.gpuId = a;
        } else if (sscanf(line.c_str(), "checksum %d %llu", &kind, &b) == 2 && validKind(kind)) {
            job.expected = content::ContentChecksum{static_cast<content::DigestKind>(kind), b};
        } else if (sscanf(line.c_str(), "perbo %u", &a) == 1) {
            job.perBo = true;
            job.fileId = a;
        } else if (sscanf(line.c_str(), "bo %u %llu %u %llu %d %llu", &a, &b, &c, &va, &kind,
                          &sum) == 6 &&
                   (kind == -1 || validKind(kind))) {
            if (job.bos.size() >= in.fds.size())
                return bad("more BOs than fds");
            job.bos.push_back({a, b, in.fds[job.bos.size()], c, va, std::nullopt});
            if (kind >= 0)
                job.bos.back().expected =
                    content::ContentChecksum{static_cast<content::DigestKind>(kind), sum};
        } else {
            return bad(line);
        }
    }
    if (job.bos.size() != in.fds.size() || job.imageName.empty())
        return bad("BOs and fds do not match, or no image");
    return job;
}

base::Result<std::vector<PagesDigest>>
runPerGpu(std::vector<std::function<base::Result<PagesDigest>()>> jobs) {
    std::vector<PagesDigest> digests(jobs.size());
    HAL_TRY(base::runAtOnce(jobs.size(), [&](size_t i) -> base::Result<void> {
        HAL_TRY_ASSIGN(digests[i], jobs[i]());
        return base::success();
    }));
    return digests;
}

} // namespace kfd
