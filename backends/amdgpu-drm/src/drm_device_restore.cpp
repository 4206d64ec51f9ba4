// The restore side of DrmDevice.
#include "drm_device.h"

#include "base/log.h"
#include "formats/dmabuf_image.h"
#include "formats/image_names.h"
#include "formats/image_store.h"

#include <set>

namespace drm {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;

base::Result<bool> DrmDevice::ownsImageImpl(uint32_t id) {
    return holdsAnyImage({formats::renderNodeImageName(id), formats::dmabufImageName(id)});
}

base::Result<bool> DrmDevice::restoreLaterImpl(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    if (store->exists(formats::renderNodeImageName(id)) ||
        !store->exists(formats::dmabufImageName(id)))
        return false;
    HAL_TRY_ASSIGN(formats::DmabufImage image, formats::readDmabufImage(*store, id));
    uint64_t key = image.shareKey ? *image.shareKey : kHandleShareKeyTag | image.gemHandle;
    // Mesa's fds: the render node's dup comes after the fd it was opened as, so a dma-buf
    // exported later often has the lower number, which criu dumps and restores first (the dump
    // then cannot name its render node's file id yet). Its BO comes with a render node of the
    // task; until then, criu asks again (as CRIU's plugin has it do for its dma-bufs).
    if (shareOwners_.count(key) ||
        (image.renderFileId && !store->exists(formats::renderNodeImageName(*image.renderFileId))) ||
        ++putOff_[id] > kMaxPutOff)
        return false;
    HAL_LOG_INFO("%s: file id %u: %s waits for its BO (GEM handle %u), not restored yet",
                 kBackendName, id, formats::dmabufImageName(id).c_str(), image.gemHandle);
    return true;
}

base::Result<int> DrmDevice::restoreDmabuf(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(formats::DmabufImage image, formats::readDmabufImage(*store, id));
    // Our images name the dma-buf; CRIU's names the BO by its GEM handle (see sharesOf).
    uint64_t key = image.shareKey ? *image.shareKey : kHandleShareKeyTag | image.gemHandle;
    auto owner = shareOwners_.find(key);
    if (owner == shareOwners_.end())
        return makeError(
            ErrorCode::NotFound,
            "%s: the BO it exports (GEM handle %u%s) is not restored; its render "
            "node must be restored first (criu before 4.3 restores a task's fds in order, "
            "without asking a plugin again: the render node's fd must be the lower)",
            formats::dmabufImageName(id).c_str(), image.gemHandle,
            image.renderFileId
                ? base::strFormat(" of render-node file id %u", *image.renderFileId).c_str()
                : "");
    const auto& [file, handle] = owner->second;
    HAL_TRY_ASSIGN_CONTEXT(int fd, calls_.exportDmabuf(restored_[file].fd, handle),
                           "while recreating the dma-buf of %s",
                           formats::dmabufImageName(id).c_str());
    HAL_LOG_INFO("%s: file id %u: dma-buf of BO handle %u of file id %u", kBackendName, id, handle,
                 restored_[file].id);
    return fd; // criu owns it
}

base::Result<void> DrmDevice::validateImage(const formats::RenderNodeImage& image,
                                            const std::vector<BoShare>& shares) {
    std::string name = formats::renderNodeImageName(image.id);
    for (size_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        if (bo.size == 0 && !shares[i].follower)
            return makeError(ErrorCode::Image, "%s: BO %zu (handle %u) has size 0", name.c_str(), i,
                             bo.handle);
        if ((bo.allocFlags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID) && shares[i].key &&
            !(shares[i].key & kHandleShareKeyTag))
            // The dump keys a BO by the inode of its dma-buf, and amdgpu_gem_prime_export
            // refuses a VM_ALWAYS_VALID BO (EPERM): no dump gave one a key, and its restore
            // could not offer it to the processes sharing it.
            return makeError(ErrorCode::Image,
                             "%s: BO %zu (handle %u) is VM_ALWAYS_VALID (flags 0x%llx) and yet has "
                             "share_key 0x%llx: the kernel exports no such BO, so none can be "
                             "shared",
                             name.c_str(), i, bo.handle,
                             static_cast<unsigned long long>(bo.allocFlags),
                             static_cast<unsigned long long>(shares[i].key));
        for (const formats::DrmVmEntry& vm : bo.vms)
            if (vm.size == 0 || vm.offset + vm.size < vm.offset ||
                (!shares[i].follower && vm.offset + vm.size > bo.size))
                return makeError(ErrorCode::Image,
                                 "%s: BO %zu (handle %u) has a mapping at 0x%llx (+0x%llx, "
                                 "0x%llx bytes) outside its %llu bytes",
                                 name.c_str(), i, bo.handle,
                                 static_cast<unsigned long long>(vm.addr),
                                 static_cast<unsigned long long>(vm.offset),
                                 static_cast<unsigned long long>(vm.size),
                                 static_cast<unsigned long long>(bo.size));
    }
    return base::success();
}

base::Result<unsigned> DrmDevice::destinationMinor(uint32_t srcGpuId) {
    HAL_TRY_ASSIGN(auto mapping, planFromTopologyImage());
    auto it = mapping.find(srcGpuId);
    if (it == mapping.end())
        return makeError(ErrorCode::NoMapping, "GPU %s is not among the GPUs of %s",
                         topology::gpuIdHex(srcGpuId).c_str(), formats::kTopologyImageName);
    HAL_TRY_ASSIGN(topology::Topology local, localTopologyImpl());
    const topology::Node* node = local.findGpu(it->second);
    if (!node || node->renderMinor() < 0)
        return makeError(ErrorCode::Topology, "GPU %s of this machine has no render node",
                         topology::gpuIdHex(it->second).c_str());
    return static_cast<unsigned>(node->renderMinor());
}

base::Result<void> DrmDevice::fillHandles(RestoredFile& file, const formats::RenderNodeImage& image,
                                          const std::vector<HandleSlot>& plan) {
    if (!handleMethodLogged_) {
        handleMethodLogged_ = true;
        HAL_LOG_INFO("%s: GEM handles are restored by the kernel's lowest-free-handle order "
                     "(ascending creation, placeholder BOs for unused numbers, imports into "
                     "their placeholder's number); GEM_CHANGE_HANDLE is not used",
                     kBackendName);
    }
    for (const HandleSlot& slot : plan) {
        const formats::DrmBoEntry* bo =
            slot.use == HandleUse::Create ? &image.bos[slot.bo] : nullptr;
        std::string what = bo ? base::strFormat("BO %u (handle %u)", slot.bo, slot.handle)
                              : base::strFormat("the placeholder of handle %u", slot.handle);
        HAL_TRY_ASSIGN_CONTEXT(
            uint32_t handle,
            bo ? calls_.gemCreate(file.fd, bo->size, bo->alignment, bo->preferredDomains,
                                  bo->allocFlags)
               : calls_.gemCreate(file.fd, kPlaceholderBytes, 0, AMDGPU_GEM_DOMAIN_CPU, 0),
            "while recreating %s", what.c_str());
        if (handle != slot.handle)
            return makeError(ErrorCode::Kernel,
                             "%s: GEM_CREATE of %s gave handle %u: the kernel did not hand out "
                             "the lowest free handle, so the checkpointed handles cannot be "
                             "reproduced",
                             formats::renderNodeImageName(file.id).c_str(), what.c_str(), handle);
        if (slot.use == HandleUse::Import)
            file.awaiting.insert(slot.handle);
        else if (slot.use == HandleUse::Placeholder)
            file.gaps.insert(slot.handle);
    }
    return base::success();
}

base::Result<void> DrmDevice::importBo(RestoredFile& file, const formats::DrmBoEntry& bo,
                                       int dmabuf) {
    if (!file.awaiting.count(bo.handle))
        return makeError(ErrorCode::PhaseOrder,
                         "handle %u of %s holds no placeholder to import into", bo.handle,
                         formats::renderNodeImageName(file.id).c_str());
    // Every other handle up to the highest is taken: the one closed is the lowest free.
    HAL_TRY_CONTEXT(calls_.gemClose(file.fd, bo.handle),
                    "while closing the placeholder of handle %u", bo.handle);
    file.awaiting.erase(bo.handle);
    HAL_TRY_ASSIGN(uint32_t handle, calls_.importDmabuf(file.fd, dmabuf));
    if (handle != bo.handle)
        return makeError(ErrorCode::Kernel,
                         "%s: PRIME_FD_TO_HANDLE gave handle %u for handle %u: the file already "
                         "holds that memory at handle %u (two handles of one BO cannot be "
                         "restored), or the kernel did not hand out the lowest free handle",
                         formats::renderNodeImageName(file.id).c_str(), handle, bo.handle, handle);
    return releaseGapsWhenComplete(file);
}

base::Result<void> DrmDevice::releaseGapsWhenComplete(RestoredFile& file) {
    if (!file.awaiting.empty())
        return base::success();
    while (!file.gaps.empty()) {
        uint32_t handle = *file.gaps.begin();
        HAL_TRY_CONTEXT(calls_.gemClose(file.fd, handle),
                        "while closing the placeholder of handle %u of %s", handle,
                        formats::renderNodeImageName(file.id).c_str());
        file.gaps.erase(file.gaps.begin());
    }
    return base::success();
}

base::Result<void> DrmDevice::importLocal(RestoredFile& file, const formats::DrmBoEntry& bo,
                                          uint64_t key) {
    const auto& [ownerFile, ownerHandle] = shareOwners_.at(key);
    HAL_TRY_ASSIGN(int dmabuf, calls_.exportDmabuf(restored_[ownerFile].fd, ownerHandle));
    auto imported = importBo(file, bo, dmabuf);
    kernel_->close(dmabuf);
    return imported;
}

base::Result<void> DrmDevice::publishOwner(RestoredFile& file, const formats::DrmBoEntry& bo,
                                           uint64_t key) {
    if (key & kHandleShareKeyTag)
        return base::success(); // a GEM handle names a BO within its own process only
    HAL_TRY_ASSIGN(int dmabuf, calls_.exportDmabuf(file.fd, bo.handle));
    auto published = shareExchange().publish(key, dmabuf);
    kernel_->close(dmabuf);
    return published;
}

base::Result<void> DrmDevice::restoreFollower(size_t fileIndex, uint32_t index,
                                              const formats::DrmBoEntry& bo, const BoShare& share) {
    RestoredFile& file = restored_[fileIndex];
    std::string what = base::strFormat("BO %u (handle %u) of %s", index, bo.handle,
                                       formats::renderNodeImageName(file.id).c_str());
    if (shareOwners_.count(share.key)) {
        HAL_TRY_CONTEXT(importLocal(file, bo, share.key),
                        "while importing %s from the BO of this process that holds it",
                        what.c_str());
    } else if (share.ownerFile) {
        // Owned by another process, restored at the same time in a process of its own.
        std::string owner = formats::renderNodeImageName(share.ownerFile);
        HAL_TRY_ASSIGN(int dmabuf,
                       shareExchange().fetch(share.key, coordination::kShareFetchTimeout, what));
        auto imported = importBo(file, bo, dmabuf);
        kernel_->close(dmabuf);
        HAL_TRY_CONTEXT(std::move(imported), "while importing %s from %s", what.c_str(),
                        owner.c_str());
    } else {
        pending_.push_back(PendingImport{fileIndex, index, bo, share.key});
        return base::success(); // its owner is a later file of this process
    }
    shareOwners_.emplace(share.key, std::make_pair(fileIndex, bo.handle));
    HAL_TRY_CONTEXT(mapBo(file, bo), "while mapping %s", what.c_str());
    return base::success();
}

hal::BoContents
DrmDevice::restoreBoContents(RestoredFile& file, uint32_t index, const formats::DrmBoEntry& bo,
                             std::vector<std::unique_ptr<content::ContentSink>>& sinks,
                             uint32_t gpuId) {
    ContentPath path = contentPathFor(bo.preferredDomains, bo.allocFlags);
    hal::LazySink::Make make;
    if (path == ContentPath::Cpu)
        make = [this, &file, &bo]() -> base::Result<std::unique_ptr<content::ContentSink>> {
            HAL_TRY_ASSIGN(uint64_t offset, calls_.mmapOffset(file.fd, bo.handle));
            HAL_TRY_ASSIGN(auto mapped, CpuMappedBo::map(*kernel_, file.fd, offset, bo.size, true));
            return std::unique_ptr<content::ContentSink>(std::move(mapped));
        };
    else if (path == ContentPath::FileSdma)
        make = [this, &file, &bo]() -> base::Result<std::unique_ptr<content::ContentSink>> {
            // Before any BO of the file is mapped and before any import takes a placeholder's
            // number: the session's staging BO and context come and go above the numbers taken.
            HAL_TRY_ASSIGN(
                auto copier,
                FileSdmaBo::open(*kernel_, FileSdmaTarget{file.fd, bo.handle, bo.size, {}}));
            return std::unique_ptr<content::ContentSink>(std::move(copier));
        };
    else
        make = [this, &file, &bo]() -> base::Result<std::unique_ptr<content::ContentSink>> {
            HAL_TRY_ASSIGN(auto sdmaBo, bindSdma(file.dstMinor, file.fd, bo.handle, bo.size));
            return std::unique_ptr<content::ContentSink>(std::move(sdmaBo));
        };
    sinks.push_back(std::make_unique<hal::LazySink>(bo.size, std::move(make)));
    return {{hal::BoFileFamily::DrmPages, file.id, file.srcMinor, index},
            hal::boKeyOf(gpuId, bo),
            bo.size,
            base::strFormat("BO %u (handle %u, %llu bytes, by %s)", index, bo.handle,
                            static_cast<unsigned long long>(bo.size), contentPathName(path)),
            nullptr,
            sinks.back().get(),
            bo.checksum};
}

base::Result<void> DrmDevice::restoreContents(RestoredFile& file,
                                              const formats::RenderNodeImage& image,
                                              const std::vector<BoShare>& shares) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    HAL_TRY_ASSIGN(content::StagingBuffer * buffer, staging());
    HAL_TRY_ASSIGN(const hal::RestoreChain* chain, restoreChainOf(file.id));
    std::vector<std::unique_ptr<content::ContentSink>> sinks;
    hal::ContentsLane lane;
    lane.gpu = base::strFormat("renderD%u", file.dstMinor);
    lane.staging = buffer->span();
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        if (shares[i].follower ||
            contentPathFor(bo.preferredDomains, bo.allocFlags) == ContentPath::None)
            continue;
        lane.bos.push_back(restoreBoContents(file, i, bo, sinks, image.gpuId));
    }
    return hal::restoreBoContents(*store, chain, lane);
}

base::Result<void> DrmDevice::mapBo(RestoredFile& file, const formats::DrmBoEntry& bo) {
    for (const formats::DrmVmEntry& vm : bo.vms)
        HAL_TRY(calls_.vaMap(file.fd, bo.handle, vm.addr, vm.offset, vm.size, vm.flags));
    if (!cpuMappable(bo.allocFlags))
        return base::success(); // no CPU mapping of it to move (GEM_MMAP refuses it)
    HAL_TRY_ASSIGN(uint64_t offset, calls_.mmapOffset(file.fd, bo.handle));
    size_t index = static_cast<size_t>(&file - restored_.data());
    vmas_[{file.srcMinor, bo.offset}] = VmaTarget{offset, index};
    return base::success();
}

base::Result<void> DrmDevice::resolvePendingImports() {
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (!shareOwners_.count(it->key)) {
            ++it;
            continue;
        }
        RestoredFile& file = restored_[it->file];
        HAL_TRY_CONTEXT(importLocal(file, it->bo, it->key),
                        "while importing BO %u (handle %u) of file id %u from its exporter",
                        it->boIndex, it->bo.handle, file.id);
        HAL_TRY_CONTEXT(mapBo(file, it->bo), "while mapping BO %u (handle %u) of file id %u",
                        it->boIndex, it->bo.handle, file.id);
        it = pending_.erase(it);
    }
    return base::success();
}

base::Result<int> DrmDevice::restoreFileImpl(uint32_t id) {
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    if (!store->exists(formats::renderNodeImageName(id)) &&
        store->exists(formats::dmabufImageName(id)))
        return restoreDmabuf(id);
    HAL_TRY_ASSIGN(formats::RenderNodeImage image, formats::readRenderNodeImage(*store, id));
    HAL_TRY_ASSIGN(std::vector<BoShare> shares, sharesOf(image, formats::renderNodeImageName(id)));
    HAL_TRY(validateImage(image, shares));
    HAL_TRY_ASSIGN(std::vector<HandleSlot> plan,
                   planHandles(image.bos, shares, formats::renderNodeImageName(id)));
    HAL_TRY_ASSIGN(FileObjectsPlan objects,
                   planFileObjects(image, formats::renderNodeImageName(id)));
    HAL_TRY(formats::checkShareOwnersPresent(*store, image));
    // An incremental image's parents are checked before any GPU is touched.
    HAL_TRY(restoreChainOf(id));
    HAL_TRY_ASSIGN_CONTEXT(unsigned dstMinor, destinationMinor(image.gpuId),
                           "while choosing the GPU for renderD%u (GPU %s)", image.renderMinor,
                           topology::gpuIdHex(image.gpuId).c_str());
    std::string path = paths_.renderNodePath(dstMinor);
    HAL_TRY_ASSIGN(uint32_t dstGpuId, gpuIdOfMinor(dstMinor));
    HAL_TRY(giveRenderNode(kernel_->deviceNodes(), paths_.devRoot, static_cast<int>(dstMinor),
                           dstGpuId));
    int fd = kernel_->open(path);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Kernel, -fd, "cannot open %s", path.c_str());
    restored_.push_back(RestoredFile{id, fd, image.renderMinor, dstMinor});
    size_t fileIndex = restored_.size() - 1;
    HAL_LOG_INFO("%s: file id %u: renderD%u -> %s, %zu BOs, %zu contexts, %zu syncobjs",
                 kBackendName, id, image.renderMinor, path.c_str(), image.bos.size(),
                 image.contexts.size(), image.syncobjs.size());

    // 1. Handles 1..highest in ascending order: every BO this file owns at its checkpointed
    //    handle, a placeholder at every other (handle_plan.h); the contexts and syncobjs at
    //    their numbers and in their state (file_objects.h).
    HAL_TRY(fillHandles(restored_[fileIndex], image, plan));
    HAL_TRY(restoreFileObjects(calls_, fd, image, objects, formats::renderNodeImageName(id)));
    // 2. Contents, while no BO of this file is mapped in its GPU VM yet.
    HAL_TRY(restoreContents(restored_[fileIndex], image, shares));
    // 3. Every recorded GPU mapping, and the new CPU mmap offsets; shared memory is offered to
    //    the other restored processes before this file waits for any of theirs.
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        if (shares[i].follower)
            continue;
        HAL_TRY_CONTEXT(mapBo(restored_[fileIndex], bo), "while mapping BO %u (handle %u)", i,
                        bo.handle);
        if (!shares[i].key)
            continue;
        // The first owner of a key keeps it (as CRIU's plugin does).
        shareOwners_.emplace(shares[i].key, std::make_pair(fileIndex, bo.handle));
        HAL_TRY_CONTEXT(publishOwner(restored_[fileIndex], bo, shares[i].key),
                        "while offering BO %u (handle %u) to the processes sharing it", i,
                        bo.handle);
    }
    // 4. The BOs this file shares with others, in ascending handle order: imported from their
    //    owner, here or elsewhere, each into its placeholder's number.
    for (const HandleSlot& slot : plan)
        if (slot.use == HandleUse::Import)
            HAL_TRY(restoreFollower(fileIndex, slot.bo, image.bos[slot.bo], shares[slot.bo]));
    HAL_TRY(releaseGapsWhenComplete(restored_[fileIndex]));
    HAL_TRY(resolvePendingImports());
    // criu owns the fd it is handed; ours stays open for later imports and mmap answers.
    int out = kernel_->dup(fd);
    if (out < 0)
        return makeErrnoError(ErrorCode::Kernel, -out, "dup of the restored %s", path.c_str());
    return out;
}

base::Result<std::optional<hal::VmaAnswer>> DrmDevice::updateVmaMapImpl(const hal::VmaQuery& q) {
    int minor = renderMinorOfPath(q.path);
    if (minor < 0)
        return std::optional<hal::VmaAnswer>();
    auto it = vmas_.find({static_cast<unsigned>(minor), q.oldPgoff});
    if (it == vmas_.end()) {
        for (const PendingImport& p : pending_)
            if (restored_[p.file].srcMinor == static_cast<unsigned>(minor) &&
                p.bo.offset == q.oldPgoff)
                return makeError(ErrorCode::PhaseOrder,
                                 "mapping at 0x%llx of %s is a BO imported from an exporter that "
                                 "is not restored yet",
                                 static_cast<unsigned long long>(q.addr), q.path.c_str());
        return makeError(ErrorCode::NotFound,
                         "no restored BO of %s had mmap offset 0x%llx (mapping at 0x%llx)",
                         q.path.c_str(), static_cast<unsigned long long>(q.oldPgoff),
                         static_cast<unsigned long long>(q.addr));
    }
    int fd = kernel_->dup(restored_[it->second.file].fd);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Kernel, -fd, "dup of the restored %s", q.path.c_str());
    return std::optional<hal::VmaAnswer>(hal::VmaAnswer{it->second.newOffset, fd});
}

base::Result<bool> DrmDevice::resumeImpl(int) {
    if (!pending_.empty()) {
        const PendingImport& p = pending_.front();
        return makeError(ErrorCode::NotFound,
                         "%zu imported BO(s) never found their exporter, e.g. BO %u (handle %u) "
                         "of file id %u: the exporting process or file was not part of this "
                         "restore",
                         pending_.size(), p.boIndex, p.bo.handle, restored_[p.file].id);
    }
    return !restored_.empty();
}

base::Result<void> DrmDevice::abortRestoreImpl() {
    engines_.clear();
    for (RestoredFile& file : restored_)
        if (file.fd >= 0)
            kernel_->close(file.fd);
    restored_.clear();
    pending_.clear();
    shareOwners_.clear();
    vmas_.clear();
    return base::success();
}

} // namespace drm
