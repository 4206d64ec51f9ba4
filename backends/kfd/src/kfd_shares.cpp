#include "kfd/kfd_shares.h"

#include "hal/image_names.h"

#include <sys/stat.h>

namespace kfd {

hal::Result<uint64_t> dmabufShareKey(KernelInterface& kernel, int dmabufFd) {
    struct stat st {};
    if (int r = kernel.fstat(dmabufFd, &st); r < 0)
        return hal::makeErrnoError(hal::ErrorCode::Kernel, -r,
                                   "kfd: cannot fstat dma-buf fd %d of a CHECKPOINT BO", dmabufFd);
    return static_cast<uint64_t>(st.st_ino);
}

hal::Result<uint64_t> kfdImportDmabuf(KernelInterface& kernel, int kfdFd, uint32_t gpuId,
                                      uint64_t va, int dmabufFd) {
    kfd_ioctl_import_dmabuf_args args = {};
    args.va_addr = va;
    args.gpu_id = gpuId;
    args.dmabuf_fd = static_cast<uint32_t>(dmabufFd);
    if (int r = kernel.ioctl(kfdFd, AMDKFD_IOC_IMPORT_DMABUF, &args); r < 0)
        return hal::makeErrnoError(hal::ErrorCode::Kernel, -r,
                                   "kfd: AMDKFD_IOC_IMPORT_DMABUF of dma-buf fd %d at 0x%llx on "
                                   "GPU %s failed",
                                   dmabufFd, static_cast<unsigned long long>(va),
                                   hal::gpuIdHex(gpuId).c_str());
    return static_cast<uint64_t>(args.handle);
}

std::optional<hal::BoSharing> ShareOwners::claim(uint64_t key, int pid, size_t bo) {
    auto [it, added] = owners_.try_emplace(key, Owner{pid, bo, std::nullopt, false, false});
    Owner& owner = it->second;
    if (added || (owner.pid == pid && owner.bo == bo))
        return hal::BoSharing{key, false};
    if (owner.written && !owner.followed)
        return std::nullopt;
    owner.followed = true;
    return hal::BoSharing{key, true};
}

void ShareOwners::setWritten(int pid) {
    for (auto& [key, owner] : owners_)
        if (owner.pid == pid)
            owner.written = true;
}

void ShareOwners::setFile(int pid, uint32_t id) {
    for (auto& [key, owner] : owners_)
        if (owner.pid == pid)
            owner.file = id;
}

const ShareOwners::Owner* ShareOwners::find(uint64_t key) const {
    auto it = owners_.find(key);
    return it == owners_.end() ? nullptr : &it->second;
}

std::string describeSharedBo(const KfdImage& image, size_t bo, const std::string& name) {
    const BoRecord& b = image.bos[bo];
    return hal::strFormat("BO %zu (%s, %llu bytes at 0x%llx) of %s, share key %llu", bo,
                          boKindName(b.allocFlags), static_cast<unsigned long long>(b.size),
                          static_cast<unsigned long long>(b.addr), name.c_str(),
                          static_cast<unsigned long long>(b.sharing ? b.sharing->key : 0));
}

hal::Result<void> checkShareOwners(hal::ImageStore& store, const KfdImage& image,
                                   const std::string& name) {
    std::map<uint64_t, bool> ownedHere;
    for (const BoRecord& b : image.bos)
        if (b.sharing && !b.sharing->follower)
            ownedHere[b.sharing->key] = true;
    for (size_t i = 0; i < image.bos.size(); ++i) {
        const BoRecord& b = image.bos[i];
        if (!b.isFollower() || ownedHere.count(b.sharing->key))
            continue;
        if (!b.shareOwnerFile)
            continue; // the owner's file was not known at dump: the restore waits for it
        std::string owner = hal::kfdImageName(*b.shareOwnerFile);
        if (!store.exists(owner))
            return hal::makeError(hal::ErrorCode::Image,
                                  "kfd: %s imports the memory of a BO of %s, which is not in %s: "
                                  "its owner is missing, so it cannot be restored",
                                  describeSharedBo(image, i, name).c_str(), owner.c_str(),
                                  store.describe().c_str());
    }
    return hal::success();
}

} // namespace kfd
