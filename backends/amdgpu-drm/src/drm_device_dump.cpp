// The dump side of DrmDevice.
#include "drm_device.h"

#include "base/log.h"
#include "formats/dmabuf_image.h"
#include "formats/image_store.h"
#include "formats/topology_codec.h"

#include <sys/sysmacros.h>

#include <algorithm>

namespace drm {

using base::ErrorCode;

using base::makeErrnoError;
using base::makeError;

std::optional<std::pair<DrmDevice::DumpNode*, size_t>>
DrmDevice::boOfDmabuf(const hal::FileRef& file) {
    // A dma-buf is the same kernel object (the same inode) however often its BO is exported.
    std::optional<std::pair<DumpNode*, size_t>> found;
    for (DumpNode& node : dumpNodes_)
        for (size_t i = 0; i < node.bos.size(); ++i) {
            const BoShare& share = node.bos[i].share;
            if (!share.key || share.key != static_cast<uint64_t>(file.st.st_ino))
                continue;
            if (!share.follower)
                return std::make_pair(&node, i);
            if (!found)
                found = std::make_pair(&node, i);
        }
    return found;
}

base::Result<bool> DrmDevice::claimFileImpl(const hal::FileRef& file) {
    if (kernel_->isDmabufPath(file.path))
        return boOfDmabuf(file).has_value(); // of a BO of a render node being dumped
    return isAmdgpuRenderNode(file.fd);
}

base::Result<bool> DrmDevice::claimVmaImpl(const hal::VmaRef& vma) {
    return isAmdgpuRenderNode(vma.fd);
}

DrmDevice::DumpNode* DrmDevice::nodeOfFile(const hal::FileRef& file) {
    for (DumpNode& node : dumpNodes_)
        if (node.fileId == file.id)
            return &node;
    auto owner = fileOwners_.find(file.id);
    if (owner == fileOwners_.end())
        return nullptr;
    for (DumpNode& node : dumpNodes_)
        if (node.pid == owner->second.first && node.targetFd == owner->second.second) {
            node.fileId = file.id;
            return &node;
        }
    return nullptr;
}

base::Result<int> DrmDevice::processOfFileImpl(const hal::FileRef& file) {
    if (kernel_->isDmabufPath(file.path)) {
        auto bo = boOfDmabuf(file);
        if (!bo)
            return makeError(ErrorCode::NotFound,
                             "%s (file id %u) exports no BO of a render node being dumped",
                             file.path.c_str(), file.id);
        return bo->first->pid;
    }
    // criu's fd and the process's fd are the same open DRM file: the same drm-client-id in
    // fdinfo, or (kernels without it) kcmp says so.
    if (dumpNodes_.empty())
        dumpWithoutDeviceHooks_ = true; // older criu: DUMP_EXT_FILE before any device hook
    std::string clientId = drmClientId(paths_, "self", file.fd);
    int self = kernel_->selfPid();
    std::vector<int> pids;
    for (const DumpNode& node : dumpNodes_)
        if (pids.empty() || pids.back() != node.pid)
            pids.push_back(node.pid);
    for (int pid : listPids(paths_))
        pids.push_back(pid);
    for (int pid : pids) {
        for (const ProcRenderFd& fd : renderFdsOfPid(paths_, pid)) {
            if (!sameOpenFile(self, file.fd, clientId, fd))
                continue;
            fileOwners_[file.id] = {pid, fd.fd};
            for (DumpNode& node : dumpNodes_)
                if (node.pid == pid && node.targetFd == fd.fd)
                    node.fileId = file.id;
            return pid;
        }
    }
    return makeError(ErrorCode::NotFound,
                     "no process under %s holds %s (drm-client-id %s): is the process still "
                     "alive and is %s the procfs of its pid namespace?",
                     paths_.procRoot.c_str(), file.path.c_str(),
                     clientId.empty() ? "unknown" : clientId.c_str(), paths_.procRoot.c_str());
}

bool DrmDevice::sameOpenFile(int pid, int fd, const std::string& clientId,
                             const ProcRenderFd& other) {
    // The same open DRM file: the same drm-client-id in fdinfo, or (kernels without it) kcmp.
    return !clientId.empty() && !other.clientId.empty()
               ? clientId == other.clientId
               : kernel_->sameFile(pid, fd, other.pid, other.fd) == 1;
}

void DrmDevice::dropNodesOf(int pid) {
    for (DumpNode& node : dumpNodes_)
        if (node.pid == pid && node.fd >= 0) {
            kernel_->close(node.fd);
            node.fd = -1;
        }
    std::erase_if(dumpNodes_, [pid](const DumpNode& node) { return node.pid == pid; });
}

base::Result<bool> DrmDevice::pauseImpl(int pid) {
    // Render nodes have no queues to stop (criu keeps the process frozen): record its render fds.
    // A pause that fails is not unpaused: the fds it took are closed here.
    bool any = false;
    for (ProcRenderFd& fd : renderFdsOfPid(paths_, pid)) {
        // Several fds of one DRM file (libdrm_amdgpu's amdgpu_device_initialize dups the fd it
        // is given): the file is found and saved once, through its lowest fd, the one
        // processOfFile names.
        auto earlier = std::find_if(dumpNodes_.begin(), dumpNodes_.end(), [&](const DumpNode& n) {
            return n.pid == pid && sameOpenFile(pid, n.targetFd, n.clientId, fd);
        });
        if (earlier != dumpNodes_.end()) {
            HAL_LOG_DEBUG("%s: process %d fd %d is the file of its fd %d", kBackendName, pid, fd.fd,
                          earlier->targetFd);
            continue;
        }
        RenderNodeSysfs sysfs = readRenderNodeSysfs(kernel_->files(), paths_, fd.minor);
        int ours = kernel_->pidGetFd(pid, fd.fd);
        if (ours < 0) {
            dropNodesOf(pid);
            return makeErrnoError(ErrorCode::Kernel, -ours,
                                  "cannot get fd %d (%s) of process %d (pidfd_getfd)", fd.fd,
                                  fd.path.c_str(), pid);
        }
        if (!isAmdgpuNode(sysfs, calls_, ours)) {
            kernel_->close(ours);
            continue;
        }
        DumpNode node;
        node.pid = pid;
        node.targetFd = fd.fd;
        node.fd = ours;
        node.minor = fd.minor;
        node.path = fd.path;
        node.clientId = fd.clientId;
        for (const auto& [id, owner] : fileOwners_)
            if (owner.first == pid && owner.second == fd.fd)
                node.fileId = id;
        HAL_LOG_DEBUG("%s: process %d fd %d is %s", kBackendName, pid, fd.fd, fd.path.c_str());
        dumpNodes_.push_back(std::move(node));
        any = true;
    }
    return any;
}

base::Result<uint64_t> DrmDevice::shareKeyOf(int fd, uint32_t handle) {
    auto dmabuf = calls_.exportDmabuf(fd, handle);
    if (!dmabuf.ok())
        return uint64_t{0}; // not exportable (e.g. VM_ALWAYS_VALID): cannot be shared either
    struct stat st {};
    int r = kernel_->fstat(dmabuf.value(), &st);
    kernel_->close(dmabuf.value());
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "fstat of the dma-buf of BO handle %u",
                              handle);
    return static_cast<uint64_t>(st.st_ino);
}

base::Result<void> DrmDevice::collectNode(DumpNode& node) {
    HAL_TRY_ASSIGN(std::vector<BoInfo> bos, calls_.listHandles(node.fd));
    for (const BoInfo& info : bos) {
        DumpBo bo;
        bo.info = info;
        HAL_TRY_ASSIGN(bo.vms, calls_.mappingInfo(node.fd, info.handle));
        bo.path = contentPathFor(info.preferredDomains, info.allocFlags);
        if (bo.path != ContentPath::None && cpuMappable(info.allocFlags)) {
            HAL_TRY_ASSIGN(bo.mmapOffset, calls_.mmapOffset(node.fd, info.handle));
        }
        HAL_TRY_ASSIGN(bo.share.key, shareKeyOf(node.fd, info.handle));
        node.bos.push_back(std::move(bo)); // who owns the key: decideOwners, before any write
    }
    std::string file =
        base::strFormat("%s (fd %d of process %d)", node.path.c_str(), node.targetFd, node.pid);
    HAL_TRY_ASSIGN(node.contexts, findContexts(calls_, node.fd, file));
    HAL_TRY_ASSIGN(node.syncobjs,
                   findSyncobjs(calls_, node.fd, file, kernel_->monotonicNs() + kGpuIdleTimeoutNs));
    node.collected = true;
    HAL_LOG_INFO("%s: process %d %s: %zu BOs, %zu contexts, %zu syncobjs", kBackendName, node.pid,
                 node.path.c_str(), node.bos.size(), node.contexts.size(), node.syncobjs.size());
    return base::success();
}

void DrmDevice::decideOwners(int pid) {
    if (!ownersDecided_.insert(pid).second)
        return;
    // Processes are written one after the other, so an owner in another process was written
    // earlier and its file id is known; within a process the exporter owns (restore waits for
    // a later file of the same process).
    for (bool imports : {false, true})
        for (const DumpNode& node : dumpNodes_)
            if (node.pid == pid)
                for (const DumpBo& bo : node.bos)
                    if (bo.share.key && bo.info.isImport == imports)
                        keyOwners_.emplace(bo.share.key,
                                           OwnerRef{pid, node.targetFd, bo.info.handle});
    for (DumpNode& node : dumpNodes_) {
        if (node.pid != pid)
            continue;
        for (DumpBo& bo : node.bos) {
            if (!bo.share.key)
                continue;
            const OwnerRef& owner = keyOwners_.at(bo.share.key);
            bo.share.follower = owner.pid != pid || owner.targetFd != node.targetFd ||
                                owner.handle != bo.info.handle;
            bo.share.ownerFile = 0;
            if (owner.pid == pid)
                continue; // found among the process's own files at restore
            for (const DumpNode& other : dumpNodes_)
                if (other.pid == owner.pid && other.targetFd == owner.targetFd)
                    bo.share.ownerFile = other.fileId.value_or(0);
        }
    }
}

base::Result<void> DrmDevice::collectObjectsImpl(int pid) {
    for (DumpNode& node : dumpNodes_)
        if (node.pid == pid && !node.collected)
            HAL_TRY_CONTEXT(collectNode(node),
                            "while listing the BOs, contexts and syncobjs of fd %d (%s)",
                            node.targetFd, node.path.c_str());
    return base::success();
}

base::Result<void> DrmDevice::waitGpuIdle(const DumpNode& node, uint32_t index, const DumpBo& bo) {
    // The process is frozen, so no new work reaches the GPU; what it submitted before may still
    // be running and writing the BO. Copying now could tear the copy: wait for it, bounded.
    uint64_t deadline = kernel_->monotonicNs() + kGpuIdleTimeoutNs;
    HAL_TRY_ASSIGN(bool idle, calls_.waitIdle(node.fd, bo.info.handle, deadline));
    if (!idle)
        return makeError(ErrorCode::Kernel,
                         "BO %u (handle %u, %llu bytes) of %s is still in use by the GPU after "
                         "%llu s: work the process submitted before it was frozen has not "
                         "finished, so its contents cannot be saved consistently. The dump is "
                         "abandoned and the process left running; check the GPU for a hang "
                         "(dmesg) and retry",
                         index, bo.info.handle, static_cast<unsigned long long>(bo.info.size),
                         node.path.c_str(),
                         static_cast<unsigned long long>(kGpuIdleTimeoutNs / 1000000000ull));
    return base::success();
}

hal::BoContents DrmDevice::saveBo(DumpNode& node, uint32_t index, DumpBo& bo, uint32_t gpuId,
                                  std::vector<std::unique_ptr<content::ContentSource>>& sources) {
    hal::LazySource::Make make;
    if (bo.path == ContentPath::Cpu)
        make = [this, &node, &bo]() -> base::Result<std::unique_ptr<content::ContentSource>> {
            HAL_TRY_ASSIGN(auto mapped,
                           CpuMappedBo::map(*kernel_, node.fd, bo.mmapOffset, bo.info.size, false));
            return std::unique_ptr<content::ContentSource>(std::move(mapped));
        };
    else if (bo.path == ContentPath::FileSdma)
        make = [this, &node, &bo]() -> base::Result<std::unique_ptr<content::ContentSource>> {
            // Made once the file's BOs, contexts and syncobjs are listed, so its context and
            // staging BO (freed when it ends) are never among them.
            FileSdmaTarget target{node.fd, bo.info.handle, bo.info.size, {}};
            for (const DumpBo& other : node.bos)
                for (const GemVmEntry& vm : other.vms)
                    target.taken.emplace_back(vm.addr, vm.size);
            HAL_TRY_ASSIGN(auto copier, FileSdmaBo::open(*kernel_, target));
            return std::unique_ptr<content::ContentSource>(std::move(copier));
        };
    else
        make = [this, &node, &bo]() -> base::Result<std::unique_ptr<content::ContentSource>> {
            HAL_TRY_ASSIGN(auto sdmaBo,
                           bindSdma(node.minor, node.fd, bo.info.handle, bo.info.size));
            return std::unique_ptr<content::ContentSource>(std::move(sdmaBo));
        };
    sources.push_back(std::make_unique<hal::LazySource>(bo.info.size, std::move(make)));
    return {{hal::BoFileFamily::DrmPages, *node.fileId, node.minor, index},
            hal::BoKey{gpuId, bo.vms.empty() ? 0 : bo.vms.front().addr, bo.info.size},
            bo.info.size,
            base::strFormat("BO %u (handle %u, %llu bytes, by %s)", index, bo.info.handle,
                            static_cast<unsigned long long>(bo.info.size),
                            contentPathName(bo.path)),
            sources.back().get(),
            nullptr,
            std::nullopt};
}

base::Result<void> DrmDevice::saveContents(DumpNode& node) {
    // Every BO with memory of this process gets its pages file, those that share another of its
    // BOs' memory too: CRIU's own plugin opens one at restore for each BO it maps (this backend
    // reads only the owners' files). Memory another process owns is written once, by its owner.
    decideOwners(node.pid);
    HAL_TRY_ASSIGN(content::StagingBuffer * buffer, staging());
    HAL_TRY_ASSIGN(uint32_t gpuId, gpuIdOfMinor(node.minor));
    std::vector<std::unique_ptr<content::ContentSource>> sources;
    std::vector<hal::ContentsLane> lanes(1);
    lanes[0].gpu = base::strFormat("renderD%u", node.minor);
    lanes[0].staging = buffer->span();
    std::vector<DumpBo*> saved;
    for (uint32_t i = 0; i < node.bos.size(); ++i) {
        DumpBo& bo = node.bos[i];
        if (bo.path == ContentPath::None || bo.share.ownerFile)
            continue;
        HAL_TRY(waitGpuIdle(node, i, bo));
        lanes[0].bos.push_back(saveBo(node, i, bo, gpuId, sources));
        saved.push_back(&bo);
    }
    HAL_TRY(saveBoContents(*node.fileId, lanes));
    for (size_t k = 0; k < saved.size(); ++k)
        saved[k]->checksum = lanes[0].bos[k].checksum;
    node.contentsSaved = true;
    return base::success();
}

base::Result<void> DrmDevice::streamContentsImpl(int pid) {
    // Contents files are named by criu's file id: save now those criu has named (DUMP_EXT_FILE
    // without earlier device hooks); the others when criu dumps their file (the process stays
    // frozen until then).
    for (DumpNode& node : dumpNodes_)
        if (node.pid == pid && node.fileId && !node.contentsSaved)
            HAL_TRY_CONTEXT(saveContents(node), "while saving the BOs of fd %d (%s)", node.targetFd,
                            node.path.c_str());
    return base::success();
}

base::Result<void> DrmDevice::writeTopologyOnce() {
    if (topologyWritten_)
        return base::success();
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(topology::Topology topo, localTopologyImpl());
    if (!dumpWithoutDeviceHooks_) {
        // criu 4.0+ recorded every process's render nodes before dumping any file: keep only
        // the GPUs they use, so a restore needs only those (a container may see no others).
        std::set<int> used;
        for (const DumpNode& node : dumpNodes_)
            used.insert(static_cast<int>(node.minor));
        topo = topology::usedGpusOnly(topo, used);
    }
    HAL_TRY_CONTEXT(formats::writeTopologyImage(*store, topo), "while writing %s",
                    formats::kTopologyImageName);
    topologyWritten_ = true;
    return base::success();
}

base::Result<void> DrmDevice::writeDmabufImage(const hal::FileRef& file) {
    auto found = boOfDmabuf(file);
    if (!found)
        return makeError(ErrorCode::Internal, "%s exports no BO of a dumped render node",
                         file.path.c_str());
    const auto& [node, index] = *found;
    formats::DmabufImage image;
    image.id = file.id;
    image.gemHandle = node->bos[index].info.handle;
    image.shareKey = node->bos[index].share.key;
    image.renderFileId = node->fileId;
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY(formats::writeDmabufImage(*store, image));
    HAL_LOG_INFO("%s: wrote %s (BO handle %u of %s)", kBackendName,
                 formats::dmabufImageName(file.id).c_str(), image.gemHandle, node->path.c_str());
    return base::success();
}

base::Result<void> DrmDevice::writeFileImagesImpl(const hal::FileRef& file, int pid) {
    decideOwners(pid);
    if (kernel_->isDmabufPath(file.path))
        return writeDmabufImage(file);
    DumpNode* node = nodeOfFile(file);
    if (!node || node->pid != pid)
        return makeError(ErrorCode::Internal, "%s of process %d was not recorded at pause",
                         file.path.c_str(), pid);
    if (!node->contentsSaved)
        HAL_TRY(saveContents(*node));
    HAL_TRY(writeTopologyOnce());
    formats::RenderNodeImage image;
    image.id = file.id;
    image.renderMinor = node->minor;
    HAL_TRY_ASSIGN(image.gpuId, gpuIdOfMinor(node->minor));
    for (const DumpBo& bo : node->bos) {
        formats::DrmBoEntry e;
        e.addr = bo.vms.empty() ? 0 : bo.vms.front().addr;
        e.size = bo.info.size;
        e.offset = bo.mmapOffset;
        e.allocFlags = bo.info.allocFlags;
        e.alignment = bo.info.alignment;
        e.preferredDomains = static_cast<uint32_t>(bo.info.preferredDomains);
        e.handle = bo.info.handle;
        e.isImport = bo.info.isImport;
        for (const GemVmEntry& vm : bo.vms)
            e.vms.push_back(formats::DrmVmEntry{vm.addr, vm.size, vm.offset, vm.flags});
        e.checksum = bo.checksum;
        e.sharing = bo.share;
        image.bos.push_back(std::move(e));
    }
    image.contexts = node->contexts;
    image.syncobjs = node->syncobjs;
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY(formats::writeRenderNodeImage(*store, image));
    HAL_LOG_INFO("%s: wrote %s (%zu BOs, %zu contexts, %zu syncobjs, GPU %s)", kBackendName,
                 formats::renderNodeImageName(file.id).c_str(), image.bos.size(),
                 image.contexts.size(), image.syncobjs.size(),
                 topology::gpuIdHex(image.gpuId).c_str());
    return base::success();
}

base::Result<void> DrmDevice::unpauseImpl(int pid) {
    // Nothing was paused; the dump of this process is over: let go of our fds of its files.
    for (DumpNode& node : dumpNodes_) {
        if (node.pid != pid || node.done)
            continue;
        node.done = true;
        if (node.fd >= 0)
            kernel_->close(node.fd);
        node.fd = -1;
    }
    return base::success();
}

} // namespace drm
