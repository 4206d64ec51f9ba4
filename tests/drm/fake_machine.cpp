#include "fake_machine.h"

#include "uapi.h"

#include <sys/sysmacros.h>

#include <cstring>
#include <filesystem>

namespace fakedrm {
namespace fs = std::filesystem;

std::vector<std::byte> pattern(uint64_t size, uint8_t seed) {
    std::vector<std::byte> out(size);
    for (uint64_t i = 0; i < size; ++i)
        out[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
    return out;
}

FakeMachine::FakeMachine() : kernel(std::make_shared<FakeKernel>()) {
    paths.devRoot = root / "dev";
    paths.sysRoot = root / "sys";
    paths.procRoot = root / "proc";
    paths.kfdTopologyRoot = root / "no-kfd";
    fs::create_directories(paths.devRoot + "/dri");
    fs::create_directories(paths.procRoot + "/self/fdinfo");
    settings.devRoot = paths.devRoot;
    settings.kfdSysfsRoot = paths.kfdTopologyRoot;
    settings.maxBufferSize = 64 << 10; // small: BOs take several staging rounds
}

GpuFiles gpuFiles(const GpuSpec& spec, const std::string& pci, bool sysfs) {
    GpuFiles out;
    std::string name = "renderD" + std::to_string(spec.minor);
    out.files.emplace_back("dev/dri/" + name, "");
    if (!sysfs)
        return out;
    std::string dev = "devices/pci0000:00/" + pci;
    out.files.emplace_back("sys/" + dev + "/vendor", "0x1002\n");
    char id[16];
    snprintf(id, sizeof id, "0x%04x\n", spec.deviceId);
    out.files.emplace_back("sys/" + dev + "/device", id);
    out.dirs.push_back("sys/bus/pci/drivers/" + spec.driver);
    out.links.emplace_back("sys/" + dev + "/driver", "../../../bus/pci/drivers/" + spec.driver);
    out.dirs.push_back("sys/class/drm/" + name);
    out.links.emplace_back("sys/class/drm/" + name + "/device", "../../../" + dev);
    return out;
}

void FakeMachine::addGpu(const GpuSpec& spec, const std::string& pci, bool sysfs) {
    kernel->addGpu(spec);
    GpuFiles add = gpuFiles(spec, pci, sysfs);
    std::string top = root.path();
    for (const auto& [path, bytes] : add.files)
        testsupport::writeFile(top + "/" + path, bytes);
    for (const std::string& dir : add.dirs)
        fs::create_directories(top + "/" + dir);
    for (const auto& [path, target] : add.links)
        fs::create_symlink(target, top + "/" + path);
}

AppFile FakeMachine::open(int pid, int targetFd, unsigned minor) {
    AppFile f;
    f.pid = pid;
    f.targetFd = targetFd;
    f.minor = minor;
    f.fd = kernel->open(paths.renderNodePath(minor));
    return dup(f, targetFd);
}

AppFile FakeMachine::dup(const AppFile& f, int targetFd) {
    AppFile d = f;
    d.targetFd = targetFd;
    kernel->setProcessFd(d.pid, targetFd, d.fd);
    std::string dir = paths.procRoot + "/" + std::to_string(d.pid);
    fs::create_directories(dir + "/fd");
    fs::create_symlink("/dev/dri/renderD" + std::to_string(d.minor),
                       dir + "/fd/" + std::to_string(targetFd));
    testsupport::writeFile(dir + "/fdinfo/" + std::to_string(targetFd),
                           "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t" +
                               std::to_string(kernel->fileOf(d.fd)->clientId) + "\n");
    return d;
}

uint32_t FakeMachine::createBo(const AppFile& f, uint64_t size, uint64_t domains, uint64_t flags,
                               uint8_t seed) {
    drm_amdgpu_gem_create c{};
    c.in.bo_size = size;
    c.in.alignment = 4096;
    c.in.domains = domains;
    c.in.domain_flags = flags;
    if (kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &c) != 0)
        return 0;
    uint32_t h = c.out.handle;
    auto bytes = pattern(size, seed);
    memcpy(kernel->fileOf(f.fd)->handles.at(h)->bytes(), bytes.data(), size);
    return h;
}

int FakeMachine::mapBo(const AppFile& f, uint32_t handle, uint64_t addr, uint64_t offset,
                       uint64_t size, uint64_t flags) {
    drm_amdgpu_gem_va v{};
    v.handle = handle;
    v.operation = AMDGPU_VA_OP_MAP;
    v.flags = static_cast<uint32_t>(flags);
    v.va_address = addr;
    v.offset_in_bo = offset;
    v.map_size = size;
    return kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_VA, &v);
}

uint64_t FakeMachine::mmapOffset(const AppFile& f, uint32_t handle) {
    drm_amdgpu_gem_mmap m{};
    m.in.handle = handle;
    kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &m);
    return m.out.addr_ptr;
}

int FakeMachine::closeBo(const AppFile& f, uint32_t handle) {
    drm_gem_close c{};
    c.handle = handle;
    return kernel->ioctl(f.fd, DRM_IOCTL_GEM_CLOSE, &c);
}

uint32_t FakeMachine::share(const AppFile& from, uint32_t handle, const AppFile& to) {
    drm_prime_handle p{};
    p.handle = handle;
    kernel->ioctl(from.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
    int dmabuf = p.fd;
    p = {};
    p.fd = dmabuf;
    kernel->ioctl(to.fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);
    kernel->close(dmabuf);
    return p.handle;
}

hal::FileRef FakeMachine::criuFile(const AppFile& f, uint32_t id) {
    hal::FileRef ref;
    ref.fd = kernel->dup(f.fd);
    ref.id = id;
    ref.st.st_mode = S_IFCHR | 0666;
    ref.st.st_rdev = makedev(drm::kDrmMajor, f.minor);
    ref.path = "/dev/dri/renderD" + std::to_string(f.minor);
    testsupport::writeFile(paths.procRoot + "/self/fdinfo/" + std::to_string(ref.fd),
                           "pos:\t0\ndrm-client-id:\t" +
                               std::to_string(kernel->fileOf(f.fd)->clientId) + "\n");
    return ref;
}

hal::FileRef FakeMachine::criuDmabufFile(const AppFile& f, uint32_t handle, uint32_t id) {
    drm_prime_handle p{};
    p.handle = handle;
    p.fd = -1;
    kernel->ioctl(f.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
    hal::FileRef ref;
    ref.fd = p.fd;
    ref.id = id;
    kernel->fstat(p.fd, &ref.st);
    ref.path = "/dmabuf:"; // the link /proc/<pid>/fd shows for a dma-buf
    return ref;
}

std::vector<std::byte> FakeMachine::contents(int fd, uint32_t handle) {
    auto file = kernel->fileOf(fd);
    if (!file || !file->handles.count(handle))
        return {};
    auto bo = file->handles.at(handle);
    return std::vector<std::byte>(bo->bytes(), bo->bytes() + bo->size);
}

} // namespace fakedrm
