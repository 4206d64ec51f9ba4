#include "kfd_steps.h"

#include <gtest/gtest.h>

namespace fakekfd {

ProcessSpec everyKindOfBo(unsigned gpus) {
    ProcessSpec spec;
    for (unsigned g = 0; g < gpus; ++g) {
        int gi = static_cast<int>(g);
        spec.bos.push_back({gi, 3 * 1024 * 1024 + 123, kVram});
        spec.bos.push_back({gi, 64 * 1024, kVramPublic});
        spec.bos.push_back({gi, 8192 + 7, kGtt});
        spec.bos.push_back({gi, 4096, kGttAql});
        spec.bos.push_back({gi, 1 << 20, kUserptr});
        spec.bos.push_back({gi, 8192, kDoorbell});
        spec.bos.push_back({gi, 4096, kMmio});
    }
    spec.objects = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xaa, 0x55};
    spec.numObjects = 5;
    return spec;
}

void dump(TestMachine& m, formats::ImageStore& store, int pid, bool pauseHooks) {
    m.kernel->seize(pid);
    auto dev = m.device(&store);
    if (pauseHooks) {
        auto paused = dev->pauseProcess(pid);
        ASSERT_TRUE(paused.ok()) << paused.error().describe();
        ASSERT_TRUE(paused.value());
        auto ck = dev->checkpointProcess(pid);
        ASSERT_TRUE(ck.ok()) << ck.error().describe();
    }
    hal::FileRef kfdFile = m.fileRef(pid, 3, kKfdFileId);
    auto claimed = dev->claimFile(kfdFile);
    ASSERT_TRUE(claimed.ok() && claimed.value());
    auto r = dev->dumpFile(kfdFile);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    for (size_t g = 0; g < m.kernel->gpus().size(); ++g) {
        hal::FileRef render =
            m.fileRef(pid, 4 + static_cast<int>(g), kKfdFileId + 1 + static_cast<uint32_t>(g));
        auto c = dev->claimFile(render);
        ASSERT_TRUE(c.ok() && c.value());
        auto rr = dev->dumpFile(render);
        ASSERT_TRUE(rr.ok()) << rr.error().describe();
        m.kernel->close(render.fd);
    }
    auto fin = dev->finishDump(true);
    ASSERT_TRUE(fin.ok()) << fin.error().describe();
    m.kernel->close(kfdFile.fd);
    EXPECT_EQ(dev->phaseOf(pid), hal::DumpPhase::Unpaused);
    FakeProcess* p = m.kernel->process(pid);
    EXPECT_FALSE(p->paused);
    EXPECT_EQ(p->evictions, 0);
}

Restored restore(TestMachine& m, formats::ImageStore& store, int pid, unsigned renderFiles) {
    Restored out;
    m.kernel->setCurrentPid(pid);
    out.dev = m.device(&store);
    auto owns = out.dev->ownsImage(kKfdFileId);
    EXPECT_TRUE(owns.ok() && owns.value());
    auto fd = out.dev->restoreFile(kKfdFileId);
    EXPECT_TRUE(fd.ok()) << fd.error().describe();
    out.kfdFd = fd.ok() ? fd.value() : -1;
    for (unsigned g = 0; g < renderFiles; ++g) {
        auto rfd = out.dev->restoreFile(kKfdFileId + 1 + g);
        EXPECT_TRUE(rfd.ok()) << rfd.error().describe();
    }
    return out;
}

void expectSameBos(const FakeProcess& before, const FakeProcess& after) {
    ASSERT_EQ(before.bos.size(), after.bos.size());
    for (size_t i = 0; i < before.bos.size(); ++i) {
        SCOPED_TRACE("BO " + std::to_string(i));
        EXPECT_EQ(before.bos[i]->addr, after.bos[i]->addr);
        EXPECT_EQ(before.bos[i]->size, after.bos[i]->size);
        EXPECT_EQ(before.bos[i]->allocFlags, after.bos[i]->allocFlags);
        EXPECT_EQ(before.bos[i]->privTag, after.bos[i]->privTag);
        EXPECT_TRUE(before.bos[i]->data == after.bos[i]->data);
    }
    EXPECT_EQ(before.objects, after.objects);
    EXPECT_EQ(before.numObjects, after.numObjects);
}

} // namespace fakekfd
