// A ROCm process that also holds BOs of its own on a render node (Mesa beside HIP, libdrm's
// amdgpu_bo_alloc): the kfd backend checkpoints what KFD allocated and nothing made through the
// render node itself, so it refuses such a process before PROCESS_INFO pauses anything, naming
// the render-node file and its BOs (GEM_LIST_HANDLES of the process's render fds, Linux 6.18+).

#include "kfd_test_machine.h"

#include "formats/image_store.h"

#include <gtest/gtest.h>
#include <libdrm/amdgpu_drm.h>

namespace {

using namespace fakekfd;

class KfdRenderBos : public ::testing::Test {
protected:
    KfdRenderBos() : m_(machineSpec(2)) {
        ProcessSpec spec;
        spec.bos = {{0, 8192, kVram}, {1, 4096, kGtt}};
        m_.kernel->addProcess(kPid, spec); // fd 3 /dev/kfd, fds 4 and 5 the render nodes
        m_.kernel->seize(kPid);
        store_ = formats::openDirectoryStore(m_.dir.path()).value();
        dev_ = m_.device(store_.get());
    }

    static constexpr int kPid = 4100;
    TestMachine m_;
    std::unique_ptr<formats::ImageStore> store_;
    std::unique_ptr<kfd::KfdDevice> dev_;
};

TEST_F(KfdRenderBos, GivenBosMadeOnTheRenderNode_ThenThePauseIsRefusedNamingThemBeforeAnyPause) {
    const uint64_t mesa = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
    uint32_t a = m_.kernel->addRenderBo(kPid, 5, 1 << 20, AMDGPU_GEM_DOMAIN_VRAM, mesa);
    uint32_t b = m_.kernel->addRenderBo(kPid, 5, 65536, AMDGPU_GEM_DOMAIN_GTT, 0);
    size_t fdsBefore = m_.kernel->openFdCount();
    auto paused = dev_->pauseProcess(kPid);
    ASSERT_FALSE(paused.ok()) << "a process with BOs of its own on a render node was paused";
    std::string why = paused.error().describe();
    EXPECT_NE(why.find("fd 5 (/fakedev/dri/renderD129)"), std::string::npos) << why;
    EXPECT_NE(why.find("2 BOs"), std::string::npos) << why;
    EXPECT_NE(why.find(base::strFormat("handle %u (1048576 bytes, domains 0x4, flags 0x%llx)", a,
                                       static_cast<unsigned long long>(mesa))),
              std::string::npos)
        << why;
    EXPECT_NE(why.find(base::strFormat("handle %u (65536 bytes, domains 0x2, flags 0x0)", b)),
              std::string::npos)
        << why;
    EXPECT_EQ(why.find("renderD128"), std::string::npos) << "fd 4 holds no BO: " << why;
    EXPECT_NE(why.find("Nothing was paused"), std::string::npos) << why;
    EXPECT_FALSE(m_.kernel->process(kPid)->paused) << "PROCESS_INFO was not called";
    EXPECT_EQ(m_.kernel->process(kPid)->evictions, 0);
    EXPECT_EQ(m_.kernel->openFdCount(), fdsBefore) << "the copies of its render fds are closed";
}

TEST_F(KfdRenderBos, GivenManyBosOnTheRenderNode_ThenTheFirstAreNamedAndTheRestCounted) {
    for (int i = 0; i < 10; ++i)
        m_.kernel->addRenderBo(kPid, 4, 4096, AMDGPU_GEM_DOMAIN_GTT, 0);
    auto paused = dev_->pauseProcess(kPid);
    ASSERT_FALSE(paused.ok());
    std::string why = paused.error().describe();
    EXPECT_NE(why.find("fd 4 (/fakedev/dri/renderD128): 10 BOs: handle 1 ("), std::string::npos)
        << why;
    EXPECT_NE(why.find("handle 8 ("), std::string::npos) << why;
    EXPECT_EQ(why.find("handle 9 ("), std::string::npos) << why;
    EXPECT_NE(why.find(" and 2 more"), std::string::npos) << why;
    EXPECT_FALSE(m_.kernel->process(kPid)->paused);
}

TEST_F(KfdRenderBos, GivenRenderFilesWithoutBosOfTheirOwn_ThenTheProcessIsPaused) {
    auto paused = dev_->pauseProcess(kPid);
    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    EXPECT_TRUE(*paused);
    EXPECT_TRUE(m_.kernel->process(kPid)->paused);
}

TEST_F(KfdRenderBos, GivenAKernelWithoutListHandles_ThenItCannotTellAndPauses) {
    m_.kernel->addRenderBo(kPid, 4, 4096, AMDGPU_GEM_DOMAIN_GTT, 0);
    m_.kernel->setListHandles(false);
    auto paused = dev_->pauseProcess(kPid);
    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    EXPECT_TRUE(m_.kernel->process(kPid)->paused);
}

TEST_F(KfdRenderBos, GivenARenderFdThatCannotBeFetched_ThenNothingIsPaused) {
    m_.kernel->failCall("pidGetFd", EPERM);
    auto paused = dev_->pauseProcess(kPid);
    ASSERT_FALSE(paused.ok());
    EXPECT_NE(paused.error().describe().find("to list the BOs it holds there"), std::string::npos)
        << paused.error().describe();
    EXPECT_FALSE(m_.kernel->process(kPid)->paused);
}

} // namespace
