// PRIME on the driver's render nodes (render_node_service.h): a dma-buf is a file of the driver,
// ROOT/files/ID/dmabuf, a block node of the machine's memory that the exporting process opens,
// so that it is a real fd of its own that fork, SCM_RIGHTS, pidfd_getfd and criu's fdstore
// carry, and whose mappings are of the BO's memory (dmabufMapping). The rules are the kernel's
// (drm_prime.c, amdgpu_dma_buf.c): one dma-buf per GEM object however often it is exported,
// VM_ALWAYS_VALID and userptr BOs refused (EPERM, the fake's primeExport), flags DRM_CLOEXEC and
// DRM_RDWR only; an import into a file that holds the object answers its handle, into another
// file of the device a new handle to the same object (the fake's primeImport).
#include "render_node_service.h"

#include "uapi.h"

#include <sys/mman.h>

#include <cerrno>

namespace kfddriver {

int RenderNodeService::primeExport(int fd, void* arg, bool* readWrite) {
    auto* p = static_cast<drm_prime_handle*>(arg);
    uint32_t flags = p->flags;
    if (int r = kernel_.ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, arg); r < 0)
        return r;
    int fakeFd = p->fd;
    std::shared_ptr<fakedrm::Bo> bo = kernel_.dmabufBo(fakeFd);
    // drm_gem_prime_handle_to_fd: the object's dma-buf (obj->dma_buf) once it has one; every
    // export installs another fd of its one file, opened as the first export asked.
    for (const auto& [id, dmabuf] : dmabufs_)
        if (dmabuf.bo == bo) {
            kernel_.close(fakeFd);
            p->fd = static_cast<int32_t>(id);
            *readWrite = dmabuf.readWrite;
            return 0;
        }
    int64_t id = nextDmabuf_;
    if (!bo || id > INT32_MAX) {
        kernel_.close(fakeFd);
        return bo ? -EMFILE : -EIO;
    }
    if (int e = memory_->makeFileNode(root_, id, "dmabuf"); e < 0) {
        kernel_.close(fakeFd);
        return e;
    }
    ++nextDmabuf_;
    dmabufs_[id] = Dmabuf{bo, fakeFd, (flags & DRM_RDWR) != 0};
    p->fd = static_cast<int32_t>(id);
    *readWrite = (flags & DRM_RDWR) != 0;
    return 0;
}

int RenderNodeService::primeImport(int fd, void* arg) {
    auto* p = static_cast<drm_prime_handle*>(arg);
    int32_t id = p->fd;
    auto dmabuf = dmabufs_.find(id);
    // dma_buf_get: a file that is not a dma-buf (the client sends -1 for one not of the driver).
    if (dmabuf == dmabufs_.end())
        return -EINVAL;
    p->fd = dmabuf->second.fakeFd;
    int r = kernel_.ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, arg);
    p->fd = id;
    return r;
}

int RenderNodeService::dmabufMapping(int64_t id, uint64_t offset, uint64_t len,
                                     uint64_t* where) const {
    auto dmabuf = dmabufs_.find(id);
    if (dmabuf == dmabufs_.end())
        return -ENODEV;
    const fakedrm::Bo& bo = *dmabuf->second.bo;
    // amdgpu_gem_object_mmap: the CPU may not map a NO_CPU_ACCESS BO, through a dma-buf either.
    if (bo.flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS)
        return -EPERM;
    // dma_buf_mmap_internal: the pages asked must lie within the dma-buf.
    if (offset > bo.size || len > bo.size - offset || !bo.placed.bytes)
        return -EINVAL;
    *where = bo.placed.offset + offset;
    return 0;
}

int RenderNodeService::importDmabuf(int minor, int id, std::shared_ptr<fakesdma::Memory>* memory) {
    auto dmabuf = dmabufs_.find(id);
    if (dmabuf == dmabufs_.end())
        return -EINVAL;
    std::shared_ptr<fakedrm::Bo> bo = dmabuf->second.bo;
    // amdgpu_dma_buf_attach / amdgpu_gem_prime_import: a BO of this device, whatever its
    // flags (NO_CPU_ACCESS is the CPU's rule, not the GPU's); the machine has no P2P.
    if (static_cast<int>(bo->minor) != minor || !bo->placed.bytes)
        return -EINVAL;
    *memory = std::make_shared<fakesdma::BytesMemory>(bo->placed.bytes, bo->size, bo);
    return 0;
}

int RenderNodeService::dmabufStat(int64_t id, struct stat* st) const {
    auto dmabuf = dmabufs_.find(id);
    if (dmabuf == dmabufs_.end())
        return -EBADF;
    if (::stat(dmabufNodePath(root_, id).c_str(), st) != 0)
        return -errno;
    st->st_size = static_cast<off_t>(dmabuf->second.bo->size);
    return 0;
}

} // namespace kfddriver
