#include "kfd/bo_transfer.h"

#include "base/log.h"
#include "topology/topology.h"

#include <algorithm>
#include <optional>

#include <cstdio>

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

uint64_t stagingPerWorker(uint64_t totalBytes, size_t workers) {
    if (workers == 0)
        workers = 1;
    constexpr uint64_t kTwoPages = 2 * 4096;
    uint64_t each = totalBytes / workers / kTwoPages * kTwoPages;
    return std::max<uint64_t>(each, kTwoPages);
}

constexpr const char* kJobMagic = "kfd-contents 1";

coordination::ContentJob encodeTransferJob(const GpuTransfer& job, uint32_t lanes) {
    coordination::ContentJob out;
    out.lane = "GPU " + topology::gpuIdHex(job.gpuId);
    out.lanes = lanes;
    std::string p = base::strFormat("%s\ngpu %u\n", kJobMagic, job.gpuId);
    p += "render " + job.renderPath + "\n";
    p += base::strFormat("file %u\n", job.fileId);
    if (job.expected)
        p += base::strFormat("checksum %d %llu\n", static_cast<int>(job.expected->kind),
                             static_cast<unsigned long long>(job.expected->value));
    if (job.perBo)
        p += "perbo\n";
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
    bool named = false; // the job names its file
    while (nextLine(&line)) {
        unsigned a = 0, c = 0;
        unsigned long long b = 0, va = 0, sum = 0;
        int kind = 0;
        auto validKind = [](int k) {
            return k >= 0 && k <= static_cast<int>(content::DigestKind::Fnv1a64);
        };
        if (line.rfind("render ", 0) == 0) {
            job.renderPath = line.substr(7);
        } else if (sscanf(line.c_str(), "file %u", &a) == 1) {
            job.fileId = a;
            named = true;
        } else if (sscanf(line.c_str(), "gpu %u", &a) == 1) {
            job.gpuId = a;
        } else if (sscanf(line.c_str(), "checksum %d %llu", &kind, &b) == 2 && validKind(kind)) {
            job.expected = content::ContentChecksum{static_cast<content::DigestKind>(kind), b};
        } else if (line == "perbo") {
            job.perBo = true;
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
    if (job.bos.size() != in.fds.size() || !named)
        return bad("BOs and fds do not match, or no file");
    return job;
}

} // namespace kfd
