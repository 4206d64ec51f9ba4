// KfdDevice, restore side: images -> GPU mapping -> RESTORE -> contents -> VMAs -> RESUME.
#include "kfd/kfd_device.h"

#include "base/at_once.h"
#include "base/log.h"
#include "formats/image_names.h"

#include <fcntl.h>

#include <map>

namespace kfd {

base::Result<bool> KfdDevice::ownsImageImpl(uint32_t id) {
    return holdsAnyImage({formats::kfdImageName(id), formats::renderNodeImageName(id)});
}

base::Result<int> KfdDevice::restoreFileImpl(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    if (store->exists(formats::kfdImageName(id)))
        return restoreKfd(id);
    if (store->exists(formats::renderNodeImageName(id)))
        return restoreRenderNode(id);
    return base::makeError(base::ErrorCode::NotFound, "kfd: no %s or %s in %s",
                           formats::kfdImageName(id).c_str(),
                           formats::renderNodeImageName(id).c_str(), store->describe().c_str());
}

base::Result<int> KfdDevice::renderFdFor(uint32_t targetGpuId) {
    auto it = renderFds_.find(targetGpuId);
    if (it != renderFds_.end())
        return it->second.get();
    HAL_TRY_ASSIGN(const topology::Topology* local, localTopology());
    const topology::Node* node = local->findGpu(targetGpuId);
    if (!node || node->renderMinor() < 0)
        return base::makeError(base::ErrorCode::Topology, "kfd: GPU %s has no render node in %s",
                               topology::gpuIdHex(targetGpuId).c_str(), local->source.c_str());
    std::string path = renderPath(node->renderMinor());
    HAL_TRY(giveRenderNode(kernel_->deviceNodes(), devDir(), node->renderMinor(), targetGpuId));
    int fd = kernel_->open(path, O_RDWR);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -fd,
                                    "kfd: cannot open %s, the render node of GPU %s", path.c_str(),
                                    topology::gpuIdHex(targetGpuId).c_str());
    renderFds_.emplace(targetGpuId, KernelFd(kernel_.get(), fd));
    return fd;
}

base::Result<int> KfdDevice::restoreKfd(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    std::string name = formats::kfdImageName(id);
    HAL_TRY_ASSIGN(KfdImage image, readKfdImage(*store, name));
    // Everything that can be checked is checked before the kernel is asked for anything.
    const hal::RestoreChain* chain = nullptr;
    if (image.layout == ContentsLayout::PerBo) {
        HAL_TRY_ASSIGN(chain, restoreChainOf(id)); // a missing or changed parent: refused here
    }
    HAL_TRY_ASSIGN(std::vector<GpuTransfer> jobs, restoreJobsOf(*store, id, image, chain));
    HAL_TRY_ASSIGN(auto mapping, planGpuMapping(image.topology));
    // KFD restores each GPU of a process once: its RESTORE refuses a second checkpointed GPU on a
    // GPU it restored already (kfd_chardev.c, criu_restore_devices: EINVAL), as
    // force-single-gpu-restore would ask of a process of several GPUs.
    std::map<uint32_t, uint32_t> firstOnto;
    for (const auto& [from, to] : mapping)
        if (auto [first, fresh] = firstOnto.emplace(to, from); !fresh)
            return base::makeError(
                base::ErrorCode::NoMapping,
                "kfd: %s: GPUs %s and %s of the checkpoint would both be restored onto GPU %s "
                "(option force-single-gpu-restore): KFD restores each GPU of a process once, so "
                "this process of %zu GPUs needs as many here",
                name.c_str(), topology::gpuIdHex(first->second).c_str(),
                topology::gpuIdHex(from).c_str(), topology::gpuIdHex(to).c_str(), mapping.size());
    HAL_TRY_ASSIGN(const topology::Topology* local, localTopology());
    gpuMap_.insert(mapping.begin(), mapping.end());

    // Where each checkpointed GPU goes: its render fd and node here (every GPU of the image).
    struct Target {
        int drmFd = -1;
        std::string renderPath;
    };
    std::map<uint32_t, Target> targets;
    std::vector<kfd_criu_device_bucket> devices;
    for (const topology::Node* gpu : image.topology.gpus()) {
        auto m = mapping.find(gpu->gpuId);
        if (m == mapping.end())
            return base::makeError(base::ErrorCode::NoMapping, "kfd: GPU %s of %s has no mapping",
                                   topology::gpuIdHex(gpu->gpuId).c_str(), name.c_str());
        kfd_criu_device_bucket d = {};
        d.user_gpu_id = gpu->gpuId;
        d.actual_gpu_id = m->second;
        HAL_TRY_ASSIGN(int drmFd, renderFdFor(m->second));
        d.drm_fd = static_cast<uint32_t>(drmFd);
        devices.push_back(d);
        // renderFdFor found the node of the target GPU with its render minor.
        targets[gpu->gpuId] = {drmFd, renderPath(local->findGpu(m->second)->renderMinor())};
    }
    std::vector<kfd_criu_bo_bucket> bos;
    for (const BoRecord& b : image.bos) {
        kfd_criu_bo_bucket bo = {};
        bo.addr = b.addr;
        bo.size = b.size;
        bo.offset = b.offset;
        bo.gpu_id = b.gpuId;
        bo.alloc_flags = b.allocFlags;
        bos.push_back(bo);
    }

    int kfdFd = kernel_->open(kfdPath(), O_RDWR);
    if (kfdFd < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -kfdFd, "kfd: cannot open %s",
                                    kfdPath().c_str());
    KernelFd kfd(kernel_.get(), kfdFd);
    HAL_TRY_CONTEXT(criuRestore(*kernel_, kfdFd, devices, bos, image.privData, image.numObjects),
                    "while restoring the KFD state of %s (%zu GPUs, %zu BOs)", name.c_str(),
                    devices.size(), bos.size());

    PendingContents pending;
    pending.id = id;
    for (size_t i = 0; i < bos.size(); ++i)
        if (boHasContents(bos[i].alloc_flags) && bos[i].dmabuf_fd != kInvalidFd)
            pending.dmabufs.emplace_back(kernel_.get(), static_cast<int>(bos[i].dmabuf_fd));
    // A kfd page (doorbells, MMIO) is mapped again through a copy of the restored KFD file:
    // criu would otherwise open the path it recorded at dump (criu/files-reg.c open_filemap),
    // which names the dumped machine's file, not this one's (real criu 4.3 on the user-space KFD
    // driver: "Can't open file .../files/1004/kfd on restore"). A real kfd_mmap finds the process
    // from `current` and takes any fd of /dev/kfd: the copy maps the same pages there.
    int kfdCopy = kernel_->dup(kfdFd);
    if (kfdCopy < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -kfdCopy,
                                    "kfd: dup (F_DUPFD_CLOEXEC) of the restored KFD file of %s",
                                    name.c_str());
    restoredKfdFds_.emplace_back(kernel_.get(), kfdCopy);
    for (size_t i = 0; i < bos.size(); ++i) {
        const kfd_criu_bo_bucket& bo = bos[i];
        if (boMappedThroughKfd(bo.alloc_flags)) {
            vmas_.add(kKfdVmaDevice, bo.addr, bo.offset, {bo.restored_offset, kfdCopy, name});
        } else if (boHasContents(bo.alloc_flags)) {
            // readKfdImage checked that every BO's GPU is among the device entries.
            const topology::Node* src = image.topology.findGpu(bo.gpu_id);
            vmas_.add(src->renderMinor(), bo.addr, bo.offset,
                      {bo.restored_offset, targets[bo.gpu_id].drmFd, name});
        }
    }
    pending.chain = chain;
    for (GpuTransfer& job : jobs) {
        job.renderPath = targets[job.gpuId].renderPath;
        for (TransferBo& bo : job.bos) {
            int dmabuf = static_cast<int>(bos[bo.index].dmabuf_fd);
            if (bos[bo.index].dmabuf_fd == kInvalidFd)
                return base::makeError(base::ErrorCode::Kernel,
                                       "kfd: the kernel gave no dmabuf fd for restored %s BO %u "
                                       "of GPU %s",
                                       boKindName(bo.allocFlags), bo.index,
                                       topology::gpuIdHex(job.gpuId).c_str());
            bo.dmabufFd = dmabuf;
        }
        pending.jobs.push_back(std::move(job));
    }
    if (image.sharedMemSize)
        HAL_TRY_CONTEXT(
            restoreHsakmtShm(options_.shmDir, {image.sharedMemSize, image.sharedMemMagic}),
            "while recreating libhsakmt's shared memory of %s", name.c_str());
    if (contentHandoff()) {
        HAL_TRY(handOverContents(pending));
    } else {
        HAL_TRY(writeContents(pending));
    }
    return kfd.release();
}

base::Result<void> KfdDevice::writeContents(PendingContents& pending) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    uint64_t each = stagingPerWorker(kfdStagingBytes(settings()), pending.jobs.size());
    HAL_TRY(base::runAtOnce(pending.jobs.size(), [&](size_t g) {
        return restoreContents(*kernel_, *store, pending.chain, pending.jobs[g], {}, each);
    }));
    pending.dmabufs.clear();
    return base::success();
}

base::Result<void> KfdDevice::handOverContents(PendingContents& pending) {
    for (const GpuTransfer& job : pending.jobs)
        HAL_TRY_CONTEXT(contentHandoff()->send(
                            encodeTransferJob(job, static_cast<uint32_t>(pending.jobs.size()))),
                        "while handing the BO contents of GPU %s to criu's main process",
                        topology::gpuIdHex(job.gpuId).c_str());
    HAL_LOG_INFO("kfd: BO contents of %s (%zu GPUs) handed to criu's main process",
                 formats::kfdImageName(pending.id).c_str(), pending.jobs.size());
    pending.dmabufs.clear(); // criu's main process holds its own copies now
    return base::success();
}

base::Result<void> KfdDevice::restoreHandedContentsImpl(coordination::ContentJob& handed,
                                                        std::span<std::byte> staging) {
    std::vector<KernelFd> fds;
    for (int fd : handed.fds)
        fds.emplace_back(kernel_.get(), fd);
    HAL_TRY_ASSIGN(GpuTransfer job, decodeTransferJob(handed));
    handed.fds.clear();
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    const hal::RestoreChain* chain = nullptr;
    if (job.perBo) {
        HAL_TRY_ASSIGN(chain, restoreChainOf(job.fileId));
    }
    return restoreContents(*kernel_, *store, chain, job, staging);
}

void KfdDevice::discardHandedContentsImpl(coordination::ContentJob& handed) {
    for (int fd : handed.fds)
        kernel_->close(fd);
    handed.fds.clear();
}

base::Result<int> KfdDevice::restoreRenderNode(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(formats::RenderNodeImage image, readRenderImageWithoutBos(*store, id));
    HAL_TRY_ASSIGN(const topology::Topology* local, localTopology());
    std::optional<uint32_t> target;
    if (auto known = gpuMap_.find(image.gpuId); known != gpuMap_.end()) {
        target = known->second; // the KFD file of the process came first and mapped its GPUs
    } else if (store->exists(formats::kTopologyImageName)) {
        HAL_TRY_ASSIGN(auto mapping, planFromTopologyImage());
        if (auto m = mapping.find(image.gpuId); m != mapping.end())
            target = m->second;
    } else if (local->findGpu(image.gpuId)) {
        // No topology to map with (the KFD image of this process comes later): the same GPU.
        target = image.gpuId;
    }
    if (!target)
        return base::makeError(base::ErrorCode::NoMapping,
                               "kfd: no GPU of this machine for the render node of GPU %s (%s)",
                               topology::gpuIdHex(image.gpuId).c_str(),
                               formats::renderNodeImageName(id).c_str());
    HAL_TRY_ASSIGN(int fd, renderFdFor(*target));
    int copy = kernel_->dup(fd);
    if (copy < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -copy,
                                    "kfd: dup (F_DUPFD_CLOEXEC) of the render-node fd of GPU %s",
                                    topology::gpuIdHex(*target).c_str());
    return copy;
}

base::Result<std::optional<hal::VmaAnswer>> KfdDevice::updateVmaMapImpl(const hal::VmaQuery& q) {
    auto device = vmaDeviceOfPath(q.path);
    if (!device)
        return std::optional<hal::VmaAnswer>();
    auto target = vmas_.find(*device, q.addr, q.oldPgoff);
    if (!target) {
        // A BO of the device recorded at this address under another offset: the KFD image and
        // criu's memory image disagree, so one was changed after the dump. Answering "not ours"
        // would have criu map the recorded path at an offset no restored BO has.
        if (auto at = vmas_.findAt(*device, q.addr))
            return base::makeError(
                base::ErrorCode::Image,
                "kfd: the mapping at 0x%llx of %s has offset 0x%llx, and %s records the BO "
                "mapped there at offset 0x%llx: the checkpoint was changed after the dump (a "
                "BO's offset in %s, or the mapping in criu's memory image)",
                static_cast<unsigned long long>(q.addr), q.path.c_str(),
                static_cast<unsigned long long>(q.oldPgoff), at->target.image.c_str(),
                static_cast<unsigned long long>(at->oldOffset), at->target.image.c_str());
        return std::optional<hal::VmaAnswer>();
    }
    hal::VmaAnswer answer;
    answer.newPgoff = target->newOffset;
    if (target->fd >= 0) {
        answer.fd = kernel_->dup(target->fd);
        if (answer.fd < 0)
            return base::makeErrnoError(base::ErrorCode::Kernel, -answer.fd,
                                        "kfd: dup of the device fd for the mapping at 0x%llx of %s",
                                        static_cast<unsigned long long>(q.addr), q.path.c_str());
    }
    return std::optional<hal::VmaAnswer>(answer);
}

base::Result<bool> KfdDevice::resumeImpl(int pid) {
    // RESUME lets the queues run: every BO's contents are back (copied by restoreFile, or by
    // criu's main process, which finished before it asked for any resume).
    int fd = kernel_->open(kfdPath(), O_RDWR);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -fd, "kfd: cannot open %s",
                                    kfdPath().c_str());
    KernelFd kfd(kernel_.get(), fd);
    auto resumed = criuResume(*kernel_, fd, pid);
    if (!resumed.ok())
        return std::move(resumed.error().addContext(
            base::strFormat("while resuming process %d through %s", pid, kfdPath().c_str())));
    return resumed;
}

base::Result<void> KfdDevice::abortRestoreImpl() {
    renderFds_.clear();
    return base::success();
}

} // namespace kfd
