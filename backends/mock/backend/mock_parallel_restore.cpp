#include "mock_bo_file.h"
#include "mock_device.h"

#include "base/log.h"

#include <unistd.h>

#include <sstream>

// Parallel restore of the mock: a restored task hands the fds of its BOs and a description of
// them (a job) to criu's main process, which restores their contents there.

namespace mock {
namespace {

/// A parallel-restore job of the mock: which render-node image, which GPUs, and for each BO (in
/// the order of the job's fds) its index, handle, size and recorded checksum.
struct MockJob {
    uint32_t id = 0;
    uint32_t srcMinor = 0;
    uint32_t srcGpu = 0;
    uint32_t dstGpu = 0;
    uint32_t context = 0;
    std::vector<std::pair<uint32_t, formats::DrmBoEntry>> bos;
};

constexpr const char* kJobMagic = "mock-contents 1";

std::string encodeJob(const MockJob& job) {
    std::ostringstream out;
    out << kJobMagic << "\n"
        << "file " << job.id << " " << job.srcMinor << " " << job.srcGpu << " " << job.dstGpu << " "
        << job.context << "\n";
    for (const auto& [index, bo] : job.bos) {
        out << "bo " << index << " " << bo.handle << " " << bo.size << " ";
        if (bo.checksum)
            out << (bo.checksum->kind == content::DigestKind::Xxh3_64 ? "0 " : "1 ")
                << bo.checksum->value << "\n";
        else
            out << "- 0\n";
    }
    return out.str();
}

base::Result<MockJob> decodeJob(const std::string& payload) {
    std::istringstream in(payload);
    std::string line;
    MockJob job;
    auto bad = [&] {
        return base::makeError(base::ErrorCode::Internal,
                               "a malformed mock parallel-restore job: %s", line.c_str());
    };
    if (!std::getline(in, line) || line != kJobMagic)
        return bad();
    std::string word;
    if (!std::getline(in, line))
        return bad();
    std::istringstream head(line);
    if (!(head >> word >> job.id >> job.srcMinor >> job.srcGpu >> job.dstGpu >> job.context) ||
        word != "file")
        return bad();
    while (std::getline(in, line)) {
        std::istringstream b(line);
        uint32_t index = 0;
        formats::DrmBoEntry bo;
        std::string kind;
        uint64_t value = 0;
        if (!(b >> word >> index >> bo.handle >> bo.size >> kind >> value) || word != "bo")
            return bad();
        if (kind == "0")
            bo.checksum = content::ContentChecksum{content::DigestKind::Xxh3_64, value};
        else if (kind == "1")
            bo.checksum = content::ContentChecksum{content::DigestKind::Fnv1a64, value};
        else if (kind != "-")
            return bad();
        job.bos.emplace_back(index, bo);
    }
    return job;
}

} // namespace

base::Result<void> MockDevice::handOverContents(const Context& ctx,
                                                const formats::RenderNodeImage& image,
                                                uint32_t dstGpu) {
    MockJob job;
    job.id = image.id;
    job.srcMinor = image.renderMinor;
    job.srcGpu = image.gpuId;
    job.dstGpu = dstGpu;
    job.context = ctx.id();
    coordination::ContentJob out;
    out.lane = base::strFormat("GPU 0x%04x", dstGpu);
    auto source = sourceTopology(); // read by restoreFileImpl already
    out.lanes = source.ok() ? static_cast<uint32_t>((*source)->gpus().size()) : 1;
    struct Fds {
        std::vector<int> fds;
        ~Fds() {
            for (int fd : fds)
                close(fd);
        }
    } exported;
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        if (isFollower(image.bos[i]))
            continue;
        HAL_TRY_ASSIGN_CONTEXT(int fd, criuExportBo(ctx, image.bos[i].handle, true),
                               "exporting BO %u for the parallel restore", image.bos[i].handle);
        exported.fds.push_back(fd);
        job.bos.emplace_back(i, image.bos[i]);
    }
    out.payload = encodeJob(job);
    out.fds = exported.fds;
    HAL_TRY_CONTEXT(contentHandoff()->send(out),
                    "handing the BO contents of %s to criu's main process",
                    formats::renderNodeImageName(image.id).c_str());
    HAL_LOG_INFO("mock: BO contents of %s (%zu BOs) handed to criu's main process",
                 formats::renderNodeImageName(image.id).c_str(), job.bos.size());
    return base::success();
}

base::Result<void> MockDevice::restoreHandedContentsImpl(coordination::ContentJob& handed,
                                                         std::span<std::byte> staging) {
    std::vector<std::unique_ptr<BoFile>> bos;
    std::vector<int> fds = std::move(handed.fds);
    handed.fds.clear();
    auto job = decodeJob(handed.payload);
    if (!job.ok() || job->bos.size() != fds.size()) {
        for (int fd : fds)
            close(fd);
        if (!job.ok())
            return std::move(job).error();
        return base::makeError(base::ErrorCode::Internal,
                               "a mock parallel-restore job lists %zu BOs and carries %zu fds",
                               job->bos.size(), fds.size());
    }
    for (size_t i = 0; i < fds.size(); ++i)
        bos.push_back(std::make_unique<BoFile>(root_, fds[i], job->bos[i].second.handle,
                                               job->bos[i].second.size));
    hal::ContentsLane lane;
    lane.gpu = base::strFormat("GPU 0x%04x (from 0x%04x, mock context %u)", job->dstGpu,
                               job->srcGpu, job->context);
    lane.staging = staging;
    for (size_t i = 0; i < job->bos.size(); ++i) {
        const auto& [index, bo] = job->bos[i];
        lane.bos.push_back(
            restoredBo(job->id, job->srcGpu, job->srcMinor, index, bo, bos[i].get()));
    }
    return restoreLane(job->id, lane);
}

} // namespace mock
