// The SDMA path: packets, copier set-up and teardown.
#include "drm_fixture.h"
#include "sdma_copier.h"

namespace fakedrm {
namespace {

TEST(DrmSdma, LinearCopyPacketsSplitAt2MiBAndPadToEightDwords) {
    auto ib = drm::buildSdmaLinearCopy(0x1'0000'1000ull, 0x2'0000'0000ull, (5ull << 20) + 3);
    ASSERT_EQ(ib.size(), 24u); // 3 packets of 7 dwords, padded
    EXPECT_EQ(ib[0], 1u);      // COPY, LINEAR
    EXPECT_EQ(ib[1], (2u << 20) - 1);
    EXPECT_EQ(ib[3], 0x1000u);
    EXPECT_EQ(ib[4], 1u);
    EXPECT_EQ(ib[5], 0u);
    EXPECT_EQ(ib[6], 2u);
    EXPECT_EQ(ib[7 + 3], 0x1000u + (2u << 20));
    EXPECT_EQ(ib[14 + 1], (1u << 20) + 2); // the tail: 1 MiB + 3 bytes
    EXPECT_EQ(ib[21], 0u);
    EXPECT_TRUE(drm::buildSdmaLinearCopy(0, 0, 0).empty());
}

TEST(DrmSdma, CopierRoundTripsThroughTheStagingBuffer) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = m.open(1, 3, 128);
    uint32_t h = m.createBo(f, 1 << 20, AMDGPU_GEM_DOMAIN_VRAM, 0, 7);
    hal::StagingBuffer staging(256 << 10);
    {
        auto copier = drm::SdmaCopier::open(*m.kernel, m.paths.renderNodePath(128),
                                            AMDGPU_FAMILY_AI, staging);
        ASSERT_TRUE(copier.ok()) << copier.error().describe();
        drm::DrmCalls calls(*m.kernel);
        int dmabuf = calls.exportDmabuf(f.fd, h).value();
        ASSERT_TRUE(copier.value()->bind(dmabuf, 1 << 20).ok());
        m.kernel->close(dmabuf);
        ASSERT_TRUE(copier.value()->copy(drm::CopyDirection::BoToStaging, 256 << 10, 256 << 10).ok());
        auto want = pattern(1 << 20, 7);
        EXPECT_EQ(0, memcmp(staging.span().data(), want.data() + (256 << 10), 256 << 10));
        memset(staging.span().data(), 0xab, 4096);
        ASSERT_TRUE(copier.value()->copy(drm::CopyDirection::StagingToBo, 0, 4096).ok());
        EXPECT_EQ(m.contents(f.fd, h)[4095], std::byte{0xab});
        EXPECT_FALSE(copier.value()->copy(drm::CopyDirection::StagingToBo, 1 << 20, 4096).ok());
        copier.value()->unbind();
        EXPECT_FALSE(copier.value()->copy(drm::CopyDirection::StagingToBo, 0, 4096).ok());
    }
    EXPECT_EQ(m.kernel->liveLibdrmObjects(), 0u);
    EXPECT_EQ(m.kernel->openFds(), 1u); // only the application's
}

TEST(DrmSdma, CopierOpenFailsOnMissingNode) {
    FakeMachine m;
    hal::StagingBuffer staging(4096);
    auto copier = drm::SdmaCopier::open(*m.kernel, m.paths.renderNodePath(128), AMDGPU_FAMILY_AI,
                                        staging);
    ASSERT_FALSE(copier.ok());
    EXPECT_NE(copier.error().describe().find("cannot open"), std::string::npos);
}

TEST(DrmSdma, BindOfSomethingThatIsNotADmabufFails) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    hal::StagingBuffer staging(4096);
    auto copier = drm::SdmaCopier::open(*m.kernel, m.paths.renderNodePath(128), AMDGPU_FAMILY_AI,
                                        staging);
    ASSERT_TRUE(copier.ok());
    EXPECT_FALSE(copier.value()->bind(12345, 4096).ok());
}

TEST(DrmSdma, ContentSourceRefusesChunksOutsideTheStagingBuffer) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    hal::StagingBuffer staging(4096);
    auto copier = drm::SdmaCopier::open(*m.kernel, m.paths.renderNodePath(128), AMDGPU_FAMILY_AI,
                                        staging);
    ASSERT_TRUE(copier.ok());
    drm::SdmaBo bo(*copier.value(), staging);
    std::vector<std::byte> elsewhere(4096);
    EXPECT_FALSE(bo.read(0, elsewhere).ok());
    EXPECT_FALSE(bo.write(0, elsewhere).ok());
}

} // namespace
} // namespace fakedrm
