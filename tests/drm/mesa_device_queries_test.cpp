// What Mesa's RADV asks of a render node to make a Vulkan device, answered by the fake as
// amdgpu_kms.c, drm_ioctl.c and amdgpu_gem.c answer it (tests/kfd/DRIVER.md: RADV as a client).
#include "drm_fixture.h"
#include "uapi.h"

#include <cerrno>

namespace fakedrm {
namespace {

class MesaDeviceQueries : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        f = m.open(1, 3, 128);
    }
    int info(uint32_t query, void* out, uint32_t size, uint32_t type = 0) {
        drm_amdgpu_info q{};
        q.return_pointer = reinterpret_cast<uintptr_t>(out);
        q.return_size = size;
        q.query = query;
        q.query_hw_ip.type = type; // query_fw.fw_type shares its place
        return m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_INFO, &q);
    }
    int cap(uint64_t capability, uint64_t* value) {
        drm_get_cap c{};
        c.capability = capability;
        int r = m.kernel->ioctl(f.fd, DRM_IOCTL_GET_CAP, &c);
        *value = c.value;
        return r;
    }
    int va(uint32_t operation, uint32_t handle, uint64_t addr, uint64_t size, uint32_t flags,
           uint64_t offset = 0) {
        drm_amdgpu_gem_va v{};
        v.handle = handle;
        v.operation = operation;
        v.flags = flags;
        v.va_address = addr;
        v.offset_in_bo = offset;
        v.map_size = size;
        return m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_VA, &v);
    }
    const std::vector<Mapping>& vm() { return m.kernel->fileOf(f.fd)->vm; }
    FakeMachine m;
    AppFile f;
};

constexpr uint32_t kRw = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE;

TEST_F(MesaDeviceQueries, SyncobjTimelinesAndPrimeAreCapsOfEveryFileOthersEinval) {
    uint64_t value = 0;
    EXPECT_EQ(0, cap(DRM_CAP_SYNCOBJ_TIMELINE, &value));
    EXPECT_EQ(1u, value);
    EXPECT_EQ(0, cap(DRM_CAP_PRIME, &value));
    EXPECT_EQ(uint64_t{DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT}, value);
    EXPECT_EQ(-EINVAL, cap(0x7777, &value));
}

TEST_F(MesaDeviceQueries, AnMiGpuHasComputeAndSdmaRingsAndNoGfxRing) {
    drm_amdgpu_info_hw_ip ip{};
    ASSERT_EQ(0, info(AMDGPU_INFO_HW_IP_INFO, &ip, sizeof ip, AMDGPU_HW_IP_COMPUTE));
    EXPECT_EQ(0xfu, ip.available_rings);
    ASSERT_EQ(0, info(AMDGPU_INFO_HW_IP_INFO, &ip, sizeof ip, AMDGPU_HW_IP_DMA));
    EXPECT_EQ((1u << gpuAt(128).sdmaEngines) - 1, ip.available_rings);
    ip = {};
    ASSERT_EQ(0, info(AMDGPU_INFO_HW_IP_INFO, &ip, sizeof ip, AMDGPU_HW_IP_GFX));
    EXPECT_EQ(0u, ip.available_rings);
    EXPECT_EQ(-EINVAL, info(AMDGPU_INFO_HW_IP_INFO, &ip, sizeof ip, AMDGPU_HW_IP_NUM));
}

TEST_F(MesaDeviceQueries, HeapsAndTheLargestAllocationAreThreeQuartersOfWhatIsUsable) {
    drm_amdgpu_memory_info mem{};
    ASSERT_EQ(0, info(AMDGPU_INFO_MEMORY, &mem, sizeof mem));
    EXPECT_EQ(gpuAt(128).vramSize, mem.vram.total_heap_size);
    EXPECT_EQ(mem.vram.usable_heap_size / 4 * 3, mem.vram.max_allocation);
    EXPECT_EQ(gpuAt(128).visibleVram, mem.cpu_accessible_vram.total_heap_size);
    EXPECT_GT(mem.gtt.total_heap_size, 0u);
}

TEST_F(MesaDeviceQueries, FirmwareOfAKnownTypeAnswersItsVersionOrZeroAnUnknownTypeEinval) {
    drm_amdgpu_info_firmware fw{};
    ASSERT_EQ(0, info(AMDGPU_INFO_FW_VERSION, &fw, sizeof fw, AMDGPU_INFO_FW_GFX_MEC));
    EXPECT_EQ(gpuAt(128).mecFw, fw.ver);
    fw.ver = 99;
    ASSERT_EQ(0, info(AMDGPU_INFO_FW_VERSION, &fw, sizeof fw, AMDGPU_INFO_FW_GFX_ME));
    EXPECT_EQ(0u, fw.ver) << "no graphics microcode on an MI-class GPU";
    EXPECT_EQ(-EINVAL, info(AMDGPU_INFO_FW_VERSION, &fw, sizeof fw, AMDGPU_INFO_FW_TOC + 1));
}

TEST_F(MesaDeviceQueries, AnAldebaransExternalRevisionIsItsRevisionPlus0x3c) {
    drm_amdgpu_info_device dev{};
    ASSERT_EQ(0, info(AMDGPU_INFO_DEV_INFO, &dev, sizeof dev));
    EXPECT_EQ(uint32_t{AMDGPU_FAMILY_AI}, dev.family);
    EXPECT_EQ(0x3cu, dev.external_rev);
}

TEST_F(MesaDeviceQueries, APrtRangeIsMappedWithoutABoAndHoldsItsVaAgainstOthers) {
    constexpr uint64_t kPrt = 0x7000'0000'0000ull, kSize = 1ull << 20;
    ASSERT_EQ(0, va(AMDGPU_VA_OP_MAP, 0, kPrt, kSize, AMDGPU_VM_PAGE_PRT));
    uint32_t h = m.createBo(f, kSize, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    EXPECT_EQ(-EINVAL, m.mapBo(f, h, kPrt, 0, kSize)) << "the range is in use";
    EXPECT_EQ(0, va(AMDGPU_VA_OP_UNMAP, 0, kPrt, kSize, AMDGPU_VM_PAGE_PRT));
    EXPECT_EQ(0, m.mapBo(f, h, kPrt, 0, kSize));
    EXPECT_EQ(-ENOENT, va(AMDGPU_VA_OP_MAP, 0, kPrt + kSize, kSize, kRw))
        << "without the PRT flag a handle is looked up";
}

TEST_F(MesaDeviceQueries, ClearKeepsTheOuterPartsOfAMappingAndReplaceMapsOverWhatWasThere) {
    constexpr uint64_t kAt = 0x1'0000'0000ull, kPage = 4096;
    uint32_t h = m.createBo(f, 4 * kPage, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    ASSERT_EQ(0, m.mapBo(f, h, kAt, 0, 4 * kPage));
    ASSERT_EQ(0, va(AMDGPU_VA_OP_CLEAR, 0, kAt + kPage, 2 * kPage, 0));
    ASSERT_EQ(2u, vm().size());
    EXPECT_EQ(kAt, vm()[0].addr);
    EXPECT_EQ(kPage, vm()[0].size);
    EXPECT_EQ(kAt + 3 * kPage, vm()[1].addr);
    EXPECT_EQ(3 * kPage, vm()[1].offset) << "the right part keeps its place in the BO";
    uint32_t g = m.createBo(f, kPage, AMDGPU_GEM_DOMAIN_GTT, 0, 2);
    ASSERT_EQ(0, va(AMDGPU_VA_OP_REPLACE, g, kAt, kPage, kRw));
    ASSERT_EQ(2u, vm().size());
    EXPECT_EQ(m.kernel->fileOf(f.fd)->handles.at(g), vm()[1].bo);
}

} // namespace
} // namespace fakedrm
