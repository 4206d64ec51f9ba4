// Render nodes served by the user-space driver (render_node_service.h): Debian's unmodified
// libdrm_amdgpu, preloaded with the driver's interposer, runs what Mesa runs (device init, INFO,
// GTT and Mesa-made VRAM BOs, VA, a context, a syncobj, SDMA copies by amdgpu_cs_submit_raw2
// and amdgpu_cs_submit) and the project's own real_libdrm.cpp beside it, every byte checked; and
// the driver takes the caller's user buffers as the kernel does, serving nothing else.
#include "driver_server.h"
#include "driver_test_support.h"
#include "drm_user_buffers.h"
#include "in_process_render_node.h"
#include "render_node_protocol.h"
#include "uapi.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace {

using kfddriver::Message;
using namespace kfddrivertest;

/// A client program run to its end on `driver`'s render node `node`, preloaded with the
/// driver's interposer: what it printed, and its exit status checked (0).
class ClientRun {
public:
    ClientRun(TwoGpuDriver& driver, const char* exe, const char* node) {
        Child client({exe, node}, {std::string("LD_PRELOAD=") + KFD_DRIVER_PRELOAD,
                                   "CRIU_AMDGPU_KFD_DRIVER=" + driver.root()});
        for (std::string line = client.line(); !line.empty(); line = client.line())
            lines_.push_back(line);
        EXPECT_EQ(0, client.wait()) << exe << " failed";
    }
    bool printed(const std::string& line) const {
        return std::find(lines_.begin(), lines_.end(), line) != lines_.end();
    }

private:
    std::vector<std::string> lines_;
};

// Two processes share a BO through a dma-buf as Mesa's do (prime_client_main.cpp): Debian's
// libdrm_amdgpu exports it (amdgpu_bo_export, dma_buf_fd) in one, passes the fd over a unix
// socket, and imports it in the other (amdgpu_bo_import), each on a DRM file of its own.
TEST(KfdDriverRenderNode, TwoProcessesShareABoThroughADmabufOnDebiansLibdrmAmdgpu) {
    TwoGpuDriver driver;
    driver.start();
    ClientRun client(driver, KFD_DRIVER_PRIME_CLIENT_EXE, "/dev/dri/renderD128");
    auto printed = [&](const std::string& line) { return client.printed(line); };
    EXPECT_TRUE(printed("exporter dma-buf one per BO")); // a second export: the same inode
    EXPECT_TRUE(printed("exporter dma-buf size 65536")); // lseek(SEEK_END), as libdrm asks it
    EXPECT_TRUE(printed("exporter dma-buf maps the BO"));
    EXPECT_TRUE(printed("exporter always-valid export Operation not permitted"));
    EXPECT_TRUE(printed("importer imported 65536 bytes at handle 1")); // its own file's first
    EXPECT_TRUE(printed("importer sees the exporter's bytes"));
    EXPECT_TRUE(printed("exporter sees the importer's bytes"));
    EXPECT_TRUE(printed("importer ok"));
    EXPECT_TRUE(printed("ok"));
    driver.end();
}

TEST(KfdDriverRenderNode, DebiansLibdrmAmdgpuRunsMesasStepsAndRealLibdrmOnTheDriver) {
    TwoGpuDriver driver;
    driver.start();
    ClientRun client(driver, KFD_DRIVER_RENDER_CLIENT_EXE, "/dev/dri/renderD129");
    auto printed = [&](const std::string& line) { return client.printed(line); };
    EXPECT_TRUE(printed("drm 3.57")); // amdgpu_device_initialize: DRM_IOCTL_VERSION's KMS 3.x
    // amdgpu_query_gpu_info: DEV_INFO and GB_ADDR_CONFIG by READ_MMR_REG.
    EXPECT_TRUE(printed("gpu family 141 device 0x740f gb_addr_cfg 0x2a114042"));
    EXPECT_TRUE(printed("sdma engines 2"));
    EXPECT_TRUE(printed("vram cpu map -1")); // GEM_MMAP of a NO_CPU_ACCESS BO: EPERM
    EXPECT_TRUE(printed("syncobj 1"));       // lowest free from 1
    EXPECT_TRUE(printed("submit raw seq 1 syncobj signaled"));
    EXPECT_TRUE(printed("submit list seq 2 signaled"));
    EXPECT_TRUE(printed("copy 262144 of 262144 bytes"));
    EXPECT_TRUE(printed("real_libdrm copy 262144 of 262144 bytes"));
    EXPECT_TRUE(printed("ok"));
    driver.end();
}

TEST_F(InProcessRenderNode, UserBuffersAreCopiedInAndOutAndTheCallersPointersComeBack) {
    char name[16] = {};
    drm_version v{};
    v.name = name;
    v.name_len = sizeof(name);
    ASSERT_EQ(0, ioctl(DRM_IOCTL_VERSION, &v));
    EXPECT_STREQ("amdgpu", name);
    EXPECT_EQ(6u, v.name_len);
    EXPECT_EQ(3, v.version_major);
    EXPECT_EQ(name, v.name); // not the driver's copy
}

TEST_F(InProcessRenderNode, AnIoctlIsFoundByItsNumberAsDrmIoctlFindsIt) {
    uint32_t bo = createBo(4096);
    drm_amdgpu_gem_va va{};
    va.handle = bo;
    va.operation = AMDGPU_VA_OP_MAP;
    va.flags = AMDGPU_VM_PAGE_READABLE;
    va.va_address = 1ull << 32;
    va.map_size = 4096;
    // libdrm's drmCommandWriteRead asks GEM_VA read-write; the kernel's table has it write-only.
    EXPECT_EQ(0, ioctl(DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA, drm_amdgpu_gem_va), &va));
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_AMDGPU_GEM_VA, &va)); // the same range again: taken
}

// ROOT/faults "drm:NAME ERRNO [NTH]" fails the NTH next render-node ioctl NAME once (the e2e
// dump faults of scenario_kfd_driver_render.sh); a name the driver does not serve is refused
// naming it, and nothing of that file is applied.
TEST_F(InProcessRenderNode, AFaultsFileFailsTheNamedRenderNodeIoctlOnce) {
    std::string faults = dir_.path() + "/faults";
    std::ofstream(faults) << "drm:SYNCOBJ_CREATE EIO 2\n";
    ASSERT_EQ(0, server_->applyFaultsFile());
    EXPECT_NE(0, access(faults.c_str(), F_OK)) << "the driver left its faults file";
    drm_syncobj_create create{};
    EXPECT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create));
    EXPECT_EQ(-EIO, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create)) << "the second call did not fail";
    EXPECT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create)) << "the fault failed more than one call";

    std::ofstream(faults) << "drm:GEM_USERPTR EIO\n";
    EXPECT_EQ(-EINVAL, server_->applyFaultsFile())
        << "an ioctl the driver does not serve was taken";
    EXPECT_EQ(0u, kfddriver::servedDrmRequestNamed("GEM_USERPTR"));
    EXPECT_EQ(DRM_IOCTL_PRIME_HANDLE_TO_FD, kfddriver::servedDrmRequestNamed("PRIME_HANDLE_TO_FD"));
    EXPECT_EQ(DRM_IOCTL_AMDGPU_WAIT_CS, kfddriver::servedDrmRequestNamed("WAIT_CS"));
    EXPECT_EQ(drm::kIoctlGemListHandles, kfddriver::servedDrmRequestNamed("GEM_LIST_HANDLES"));
    EXPECT_EQ(0, ioctl(DRM_IOCTL_SYNCOBJ_CREATE, &create));
}

TEST_F(InProcessRenderNode, BadUserBuffersAndUnservedIoctlsAreRefused) {
    drm_amdgpu_cs cs{};
    cs.in.ctx_id = 1;
    cs.in.num_chunks = 1;
    cs.in.chunks = 8; // no memory of this process
    EXPECT_EQ(-EFAULT, ioctl(DRM_IOCTL_AMDGPU_CS, &cs));
    uint32_t regs[4] = {};
    drm_amdgpu_info info{};
    info.return_pointer = reinterpret_cast<uintptr_t>(regs);
    info.return_size = 128u << 20; // beyond what one ioctl may name
    info.query = AMDGPU_INFO_DEV_INFO;
    EXPECT_EQ(-ENOMEM, ioctl(DRM_IOCTL_AMDGPU_INFO, &info));
    drm_amdgpu_gem_userptr userptr{};
    userptr.addr = reinterpret_cast<uintptr_t>(regs);
    userptr.size = 4096;
    EXPECT_EQ(-ENOTTY, ioctl(DRM_IOCTL_AMDGPU_GEM_USERPTR, &userptr)); // the caller's own memory
}

// PRIME as drm_prime.c and amdgpu_dma_buf.c keep it; the struct's fd is the dma-buf's file id
// of the driver here (the client turns it into an fd of its node: drmUserIoctl).
TEST_F(InProcessRenderNode, PrimeExportsOneDmabufPerBoAndImportsItAsTheKernelDoes) {
    uint32_t bo = createBo(8192);
    drm_prime_handle prime{};
    prime.handle = bo;
    prime.flags = DRM_CLOEXEC | DRM_RDWR;
    Message answer = call(DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
    ASSERT_EQ(0, answer.pid);
    EXPECT_EQ(1u, answer.a) << "the first export asked DRM_RDWR";
    int32_t dmabuf = prime.fd;
    EXPECT_GE(dmabuf, kfddriver::RenderNodeService::kDmabufFileBase);
    struct stat node {};
    EXPECT_EQ(0, ::stat(kfddriver::dmabufNodePath(dir_.path(), dmabuf).c_str(), &node));
    EXPECT_TRUE(S_ISBLK(node.st_mode)) << "a dma-buf is a node of the machine's memory";
    prime.flags = DRM_CLOEXEC; // read-only asked: the one dma-buf keeps the first export's mode
    answer = call(DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
    ASSERT_EQ(0, answer.pid);
    EXPECT_EQ(dmabuf, prime.fd) << "a second export made a second dma-buf";
    EXPECT_EQ(1u, answer.a);
    prime.flags = O_NONBLOCK;
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime));
    prime.flags = 0;
    prime.handle = 77;
    EXPECT_EQ(-ENOENT, ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime));
    drm_amdgpu_gem_create mesa{};
    mesa.in.bo_size = 4096;
    mesa.in.domains = AMDGPU_GEM_DOMAIN_VRAM;
    mesa.in.domain_flags = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
    ASSERT_EQ(0, ioctl(DRM_IOCTL_AMDGPU_GEM_CREATE, &mesa));
    prime.handle = mesa.out.handle;
    EXPECT_EQ(-EPERM, ioctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime)) << "a per-VM BO was exported";

    // On the file that holds it: its own handle.
    drm_prime_handle import{};
    import.fd = dmabuf;
    ASSERT_EQ(0, ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &import));
    EXPECT_EQ(bo, import.handle);
    EXPECT_EQ(dmabuf, import.fd) << "the caller's fd field did not come back";
    // On another file of the device: the lowest free handle, the same object.
    int64_t other = openRenderNode();
    ASSERT_GE(other, 0);
    ASSERT_EQ(0, ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &import, other));
    EXPECT_EQ(1u, import.handle);
    uint32_t taken = import.handle;
    ASSERT_EQ(0, ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &import, other));
    EXPECT_EQ(taken, import.handle) << "a second import made a second handle";
    drm_amdgpu_gem_mmap mine{}, theirs{};
    mine.in.handle = bo;
    theirs.in.handle = taken;
    ASSERT_EQ(0, ioctl(DRM_IOCTL_AMDGPU_GEM_MMAP, &mine));
    ASSERT_EQ(0, ioctl(DRM_IOCTL_AMDGPU_GEM_MMAP, &theirs, other));
    EXPECT_EQ(mine.out.addr_ptr, theirs.out.addr_ptr) << "the import is not the same memory";
    import.fd = file_; // a file of the driver that is no dma-buf
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &import));
    import.fd = -1; // an fd not of the driver
    EXPECT_EQ(-EINVAL, ioctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &import));

    // Its mapping is the BO's memory (dma_buf_mmap), its size the BO's.
    Message mapped = mapping(dmabuf, 4096, 4096);
    EXPECT_EQ(0, mapped.pid);
    EXPECT_EQ(mine.out.addr_ptr + 4096, mapped.a);
    EXPECT_EQ(-EINVAL, mapping(dmabuf, 4096, 8192).pid) << "past its end";
    struct stat dmabufStat {};
    ASSERT_EQ(0, fstat(dmabuf, &dmabufStat));
    EXPECT_EQ(8192, dmabufStat.st_size);
    EXPECT_EQ(node.st_ino, dmabufStat.st_ino) << "not the inode criu sees of the fd";
}

TEST_F(InProcessRenderNode, ABoIsMappedAtItsGemMmapOffsetInTheMachinesMemoryOnly) {
    drm_amdgpu_gem_mmap mmap{};
    mmap.in.handle = createBo(8192);
    ASSERT_EQ(0, ioctl(DRM_IOCTL_AMDGPU_GEM_MMAP, &mmap));
    uint64_t offset = mmap.out.addr_ptr;
    EXPECT_TRUE(kfddriver::RenderNodeService::servesOffset(offset));
    Message answer = mapping(file_, offset, 8192);
    EXPECT_EQ(0, answer.pid);
    EXPECT_EQ(offset, answer.a);
    // Past the BO's end: drm_gem_mmap finds no object.
    EXPECT_EQ(-EACCES, mapping(file_, offset, 3 * 4096).pid);
}

} // namespace

namespace {

std::string fileText(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

// libdrm's drmGetDevices2 (Mesa's RADV enumerating GPUs) finds a DRM device by sysfs before
// opening it: the driver describes each render node when the machine starts.
TEST(KfdDriverSysfs, EveryRenderNodeIsAPciDeviceOfAmdInSysfsBeforeAnyoneOpensIt) {
    testsupport::TempDir dir;
    kfddriver::MachineSpec spec;
    spec.gpus = 2;
    std::string error;
    kfddriver::DriverServer server(dir.path(), spec, &error);
    ASSERT_EQ("", error);
    std::vector<std::string> slots;
    for (int minor : {128, 129}) {
        std::string device =
            kfddriver::drmSysfsPath(dir.path()) + "/226:" + std::to_string(minor) + "/device";
        struct stat st {};
        EXPECT_EQ(0, stat((device + "/drm/renderD" + std::to_string(minor)).c_str(), &st));
        EXPECT_EQ("0x1002\n", fileText(device + "/vendor"));
        EXPECT_EQ("0x740f\n", fileText(device + "/device"));
        char link[256] = {};
        ASSERT_GT(readlink((device + "/subsystem").c_str(), link, sizeof link - 1), 0);
        EXPECT_STREQ("pci", strrchr(link, '/') + 1);
        std::string uevent = fileText(device + "/uevent");
        size_t at = uevent.find("PCI_SLOT_NAME=");
        ASSERT_NE(std::string::npos, at) << uevent;
        slots.push_back(uevent.substr(at, uevent.find('\n', at) - at));
    }
    EXPECT_NE(slots[0], slots[1]) << "two GPUs, two PCI locations";
}
