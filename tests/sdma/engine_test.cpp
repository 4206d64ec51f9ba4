// The shared SDMA engine against the shared fake libdrm: set-up, copies, the two-slot overlap,
// and the errors a caller sees.
#include "fake_libdrm.h"
#include "sdma/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

using ::testing::HasSubstr;

namespace {

constexpr int kRenderFd = 50;
constexpr int kDmabufFd = 60;
constexpr uint64_t kPage = 4096;

/// One GPU, one render node, one 64 KiB BO behind one dmabuf.
class OneGpuHost final : public fakesdma::Host {
public:
    OneGpuHost() : bo(64 * 1024) {
        for (size_t i = 0; i < bo.size(); ++i)
            bo[i] = static_cast<std::byte>(i * 7);
    }
    int openRenderNode(const std::string& path) override {
        return path == "/dev/dri/renderD128" ? (++open, kRenderFd) : -ENOENT;
    }
    int closeRenderNode(int) override { return --open, 0; }
    int64_t gpuOfRenderFd(int fd) override { return fd == kRenderFd ? 0x59ea : -EBADF; }
    int importDmabuf(int64_t, int fd, std::shared_ptr<fakesdma::Memory>* memory) override {
        if (fd != kDmabufFd)
            return -EBADF;
        *memory = std::make_shared<fakesdma::BytesMemory>(bo.data(), bo.size());
        return 0;
    }
    void copied(int64_t, bool toBo, uint64_t bytes) override {
        copies.push_back((toBo ? "to BO " : "to host ") + std::to_string(bytes));
    }

    std::vector<std::byte> bo;
    std::vector<std::string> copies;
    int open = 0;
};

class SdmaEngine : public ::testing::Test {
protected:
    base::Result<std::unique_ptr<sdma::Engine>> openEngine(uint64_t stagingBytes = 4 * kPage) {
        return sdma::Engine::open(libdrm, {"/dev/dri/renderD128", "0x59ea", 2}, stagingBytes);
    }

    OneGpuHost host;
    fakesdma::FakeLibdrm libdrm{host};
};

} // namespace

TEST_F(SdmaEngine, GivenABo_WhenCopiedBothWays_ThenTheBytesArriveAndNothingLeaks) {
    {
        auto engine = openEngine();
        ASSERT_TRUE(engine.ok()) << engine.error().describe();
        sdma::Engine& e = *engine.value();
        EXPECT_EQ(e.slotSize(), 2 * kPage);
        auto bo = e.importBo(kDmabufFd, host.bo.size());
        ASSERT_TRUE(bo.ok()) << bo.error().describe();
        ASSERT_TRUE(e.copy(sdma::Direction::BoToHost, *bo.value(), kPage, 1, kPage).ok());
        EXPECT_EQ(0, memcmp(e.slot(1).data(), host.bo.data() + kPage, kPage));
        memset(e.slot(0).data(), 0x5a, 100);
        ASSERT_TRUE(e.copy(sdma::Direction::HostToBo, *bo.value(), 10, 0, 100).ok());
        EXPECT_EQ(host.bo[10], std::byte{0x5a});
        EXPECT_EQ(host.bo[109], std::byte{0x5a});
        EXPECT_NE(host.bo[110], std::byte{0x5a});
        e.release(std::move(bo.value()));
    }
    EXPECT_EQ(libdrm.liveObjects(), 0u);
    EXPECT_EQ(host.open, 0) << "the engine closes its render fd";
    EXPECT_TRUE(libdrm.faults().empty());
}

TEST_F(SdmaEngine,
       GivenTwoSlots_WhenTheSecondIsSubmittedBeforeTheFirstIsWaited_ThenTheyRunInOrder) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    sdma::Engine& e = *engine.value();
    auto bo = e.importBo(kDmabufFd, host.bo.size());
    ASSERT_TRUE(bo.ok());
    auto first = e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 0, 0, 2 * kPage);
    auto second = e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 2 * kPage, 1, kPage);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_LT(first.value(), second.value());
    ASSERT_TRUE(e.wait(first.value()).ok());
    EXPECT_EQ(host.copies, std::vector<std::string>{"to host 8192"}) << "the second still runs";
    EXPECT_EQ(0, memcmp(e.slot(0).data(), host.bo.data(), 2 * kPage));
    ASSERT_TRUE(e.wait(second.value()).ok());
    EXPECT_EQ(host.copies, (std::vector<std::string>{"to host 8192", "to host 4096"}));
    EXPECT_EQ(0, memcmp(e.slot(1).data(), host.bo.data() + 2 * kPage, kPage));
    e.release(std::move(bo.value()));
    EXPECT_TRUE(libdrm.faults().empty()) << "each slot has its own IB and staging half";
}

TEST_F(SdmaEngine, GivenASubmitFailure_ThenTheErrorNamesTheCallAndTheGpu) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    auto bo = engine.value()->importBo(kDmabufFd, kPage);
    ASSERT_TRUE(bo.ok());
    libdrm.failCall("submitSdma", ENOMEM);
    auto r = engine.value()->copy(sdma::Direction::BoToHost, *bo.value(), 0, 0, kPage);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("GPU 0x59ea: amdgpu_cs_submit"));
    EXPECT_EQ(r.error().sysErrno(), ENOMEM);
    engine.value()->release(std::move(bo.value()));
}

TEST_F(SdmaEngine, GivenAFenceThatNeverSignals_ThenTheEngineIsReportedHungOnItsGpu) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    auto bo = engine.value()->importBo(kDmabufFd, kPage);
    ASSERT_TRUE(bo.ok());
    libdrm.hang(true);
    auto r = engine.value()->copy(sdma::Direction::HostToBo, *bo.value(), 0, 0, kPage);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("GPU 0x59ea"));
    EXPECT_THAT(r.error().describe(), HasSubstr("did not complete within 30 s"));
    EXPECT_THAT(r.error().describe(), HasSubstr("hung"));
    engine.value()->release(std::move(bo.value()));
}

TEST_F(SdmaEngine, GivenAFailingFenceQuery_ThenTheErrorCarriesItsErrno) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    auto bo = engine.value()->importBo(kDmabufFd, kPage);
    ASSERT_TRUE(bo.ok());
    libdrm.failCall("waitFence", EIO);
    auto r = engine.value()->copy(sdma::Direction::HostToBo, *bo.value(), 0, 0, kPage);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu_cs_query_fence_status"));
    EXPECT_EQ(r.error().sysErrno(), EIO);
    engine.value()->release(std::move(bo.value()));
}

TEST_F(SdmaEngine, GivenBadCopies_ThenTheyAreRefusedBeforeTheGpuSeesThem) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    sdma::Engine& e = *engine.value();
    auto bo = e.importBo(kDmabufFd, kPage);
    ASSERT_TRUE(bo.ok());
    EXPECT_FALSE(e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 0, 0, 0).ok());
    EXPECT_FALSE(e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 0, 0, 3 * kPage).ok());
    EXPECT_FALSE(e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 0, 2, kPage).ok());
    EXPECT_FALSE(e.submitCopy(sdma::Direction::BoToHost, *bo.value(), 64 * 1024, 0, 1).ok());
    e.release(std::move(bo.value()));
    e.release(nullptr);
    EXPECT_TRUE(host.copies.empty());
}

TEST_F(SdmaEngine, GivenABoSmallerThanTheCheckpointSays_ThenImportFailsWithoutLeaking) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    auto bo = engine.value()->importBo(kDmabufFd, 1 << 20);
    ASSERT_FALSE(bo.ok());
    EXPECT_THAT(bo.error().describe(), HasSubstr("the checkpoint says 1048576"));
    EXPECT_FALSE(engine.value()->importBo(kDmabufFd + 1, kPage).ok());
    engine.value().reset();
    EXPECT_EQ(libdrm.liveObjects(), 0u);
}

TEST_F(SdmaEngine, GivenFailingSetUpSteps_ThenEachNamesItsStepAndLeavesNothingBehind) {
    const char* const calls[] = {"openRenderNode", "deviceInitialize", "ctxCreate",
                                 "boFromUserMem",  "vaRangeAlloc",     "boVaOp",
                                 "boAllocGtt",     "boCpuMap"};
    for (const char* call : calls) {
        libdrm.failCall(call, EACCES);
        auto engine = openEngine();
        ASSERT_FALSE(engine.ok()) << call;
        EXPECT_THAT(engine.error().describe(), HasSubstr("GPU 0x59ea")) << call;
        EXPECT_EQ(libdrm.liveObjects(), 0u) << call;
        EXPECT_EQ(host.open, 0) << call;
    }
}

TEST_F(SdmaEngine, GivenAStagingSpanTooSmallForItsSlots_ThenOpenRefusesIt) {
    alignas(4096) static std::byte small[4096];
    auto engine = sdma::Engine::open(libdrm, {"/dev/dri/renderD128", "0x59ea", 2}, small);
    ASSERT_FALSE(engine.ok());
    EXPECT_THAT(engine.error().describe(), HasSubstr("cannot hold 2 page-aligned SDMA slots"));
}

TEST_F(SdmaEngine, GivenFailingImportSteps_ThenEachIsUndone) {
    auto engine = openEngine();
    ASSERT_TRUE(engine.ok());
    size_t live = libdrm.liveObjects();
    for (const char* call : {"boImportDmabuf", "vaRangeAlloc", "boVaOp", "boListCreate"}) {
        libdrm.failCall(call, ENOMEM);
        auto bo = engine.value()->importBo(kDmabufFd, kPage);
        ASSERT_FALSE(bo.ok()) << call;
        EXPECT_EQ(libdrm.liveObjects(), live) << call;
    }
    EXPECT_TRUE(libdrm.faults().empty());
}
