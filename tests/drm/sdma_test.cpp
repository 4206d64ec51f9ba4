// The SDMA path of the render-node backend: BOs bound to the shared engine through the device's
// one staging buffer.
#include "drm_fixture.h"

namespace fakedrm {
namespace {

/// An engine on renderD128 of `m` whose staging buffer is `staging` (one slot).
base::Result<std::unique_ptr<sdma::Engine>> openEngine(FakeMachine& m,
                                                       content::StagingBuffer& staging) {
    sdma::EngineOptions options{m.paths.renderNodePath(128), "renderD128", 1};
    return sdma::Engine::open(m.kernel->libdrm(), options, staging.span());
}

TEST(DrmSdma, BoRoundTripsThroughTheStagingBuffer) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = m.open(1, 3, 128);
    uint32_t h = m.createBo(f, 1 << 20, AMDGPU_GEM_DOMAIN_VRAM, 0, 7);
    content::StagingBuffer staging(256 << 10);
    {
        auto engine = openEngine(m, staging);
        ASSERT_TRUE(engine.ok()) << engine.error().describe();
        drm::DrmCalls calls(*m.kernel);
        int dmabuf = calls.exportDmabuf(f.fd, h).value();
        auto bo = drm::SdmaBo::bind(*engine.value(), dmabuf, 1 << 20);
        m.kernel->close(dmabuf);
        ASSERT_TRUE(bo.ok()) << bo.error().describe();
        auto chunk = staging.span().first(256 << 10);
        ASSERT_TRUE(bo.value()->read(256 << 10, chunk).ok());
        auto want = pattern(1 << 20, 7);
        EXPECT_EQ(0, memcmp(chunk.data(), want.data() + (256 << 10), 256 << 10));
        memset(chunk.data(), 0xab, 4096);
        ASSERT_TRUE(bo.value()->write(0, chunk.first(4096)).ok());
        EXPECT_EQ(m.contents(f.fd, h)[4095], std::byte{0xab});
        EXPECT_FALSE(bo.value()->write(1 << 20, chunk.first(4096)).ok());
    }
    EXPECT_EQ(m.kernel->liveLibdrmObjects(), 0u);
    EXPECT_EQ(m.kernel->openFds(), 1u); // only the application's
}

TEST(DrmSdma, EngineOpenFailsOnMissingNode) {
    FakeMachine m;
    content::StagingBuffer staging(4096);
    auto engine = openEngine(m, staging);
    ASSERT_FALSE(engine.ok());
    EXPECT_NE(engine.error().describe().find("cannot open"), std::string::npos);
}

TEST(DrmSdma, BindOfSomethingThatIsNotADmabufFails) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    content::StagingBuffer staging(4096);
    auto engine = openEngine(m, staging);
    ASSERT_TRUE(engine.ok());
    EXPECT_FALSE(drm::SdmaBo::bind(*engine.value(), 12345, 4096).ok());
}

TEST(DrmSdma, ContentSourceRefusesChunksOutsideTheStagingBuffer) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = m.open(1, 3, 128);
    uint32_t h = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_VRAM, 0, 7);
    content::StagingBuffer staging(4096);
    auto engine = openEngine(m, staging);
    ASSERT_TRUE(engine.ok());
    drm::DrmCalls calls(*m.kernel);
    int dmabuf = calls.exportDmabuf(f.fd, h).value();
    auto bo = drm::SdmaBo::bind(*engine.value(), dmabuf, 4096);
    m.kernel->close(dmabuf);
    ASSERT_TRUE(bo.ok());
    std::vector<std::byte> elsewhere(4096);
    EXPECT_FALSE(bo.value()->read(0, elsewhere).ok());
    EXPECT_FALSE(bo.value()->write(0, elsewhere).ok());
}

} // namespace
} // namespace fakedrm
