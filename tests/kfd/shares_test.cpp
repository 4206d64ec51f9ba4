// BOs shared between KFD processes (exported by one, imported by another, or by the same one):
// the fake kernel's EXPORT_DMABUF / IMPORT_DMABUF, and the backend dumping each shared memory
// once and reconnecting the imports at restore.
#include "fake_share_exchange.h"
#include "kfd_test_machine.h"

#include "hal/image_names.h"
#include "kfd/kfd_images.h"
#include "kfd/kfd_shares.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

using namespace fakekfd;

namespace {

constexpr uint32_t kGpu = 0x1000;
constexpr uint64_t kImportVa = 0x600000000000ull;

/// The plugin's copy of the KFD file of `pid`, usable as that process (the fake lets only the
/// process that opened /dev/kfd export and import).
int kfdOf(TestMachine& m, int pid) {
    m.kernel->seize(pid);
    m.kernel->setCurrentPid(pid);
    return m.kernel->criuCopyOf(pid, 3);
}

/// `exporter` exports its BO `bo`; `importer` imports it at `va`. Returns the import's handle.
uint64_t share(TestMachine& m, int exporter, size_t bo, int importer, uint64_t va) {
    FakeProcess* p = m.kernel->process(exporter);
    int efd = kfdOf(m, exporter);
    kfd::ExportDmabufArgs ex = {};
    ex.handle = kfd::makeMemHandle(kGpu, p->bos.at(bo)->privTag);
    ex.flags = O_CLOEXEC | O_RDWR;
    EXPECT_EQ(0, m.kernel->ioctl(efd, kfd::kIocExportDmabuf, &ex));
    int ifd = kfdOf(m, importer);
    kfd_ioctl_import_dmabuf_args im = {};
    im.va_addr = va;
    im.gpu_id = kGpu;
    im.dmabuf_fd = ex.dmabuf_fd;
    EXPECT_EQ(0, m.kernel->ioctl(ifd, AMDKFD_IOC_IMPORT_DMABUF, &im));
    m.kernel->close(static_cast<int>(ex.dmabuf_fd));
    m.kernel->close(efd);
    m.kernel->close(ifd);
    return im.handle;
}

struct Task {
    int pid;
    uint32_t fileId;
};

/// criu's DUMP_EXT_FILE of the KFD file of `t`.
void dumpKfdFile(TestMachine& m, kfd::KfdDevice& dev, const Task& t) {
    hal::FileRef f = m.fileRef(t.pid, 3, t.fileId);
    auto claimed = dev.claimFile(f);
    ASSERT_TRUE(claimed.ok() && claimed.value());
    auto r = dev.dumpFile(f);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    m.kernel->close(f.fd);
}

/// Dumps the KFD files of `tasks` with one Device, as one criu dump of a process tree does.
void dumpTree(TestMachine& m, hal::ImageStore& store, const std::vector<Task>& tasks) {
    auto dev = m.device(&store);
    for (const Task& t : tasks) {
        m.kernel->seize(t.pid);
        auto paused = dev->pauseProcess(t.pid);
        ASSERT_TRUE(paused.ok() && paused.value());
        auto ck = dev->checkpointProcess(t.pid);
        ASSERT_TRUE(ck.ok()) << ck.error().describe();
    }
    for (const Task& t : tasks)
        dumpKfdFile(m, *dev, t);
    ASSERT_TRUE(dev->finishDump(true).ok());
}

/// Dumps the KFD files of `tasks` one by one with one Device, as a criu without PAUSE_DEVICES
/// and CHECKPOINT_DEVICES does (each process is checkpointed as its file is dumped).
void dumpFilesOnly(TestMachine& m, hal::ImageStore& store, const std::vector<Task>& tasks) {
    auto dev = m.device(&store);
    for (const Task& t : tasks) {
        m.kernel->seize(t.pid);
        dumpKfdFile(m, *dev, t);
    }
    ASSERT_TRUE(dev->finishDump(true).ok());
}

/// Restores the KFD file `fileId` as task `pid` (a Device of its own, as criu's forks have).
hal::Result<int> restoreTask(TestMachine& m, hal::ImageStore& store, hal::ShareExchange& shares,
                             int pid, uint32_t fileId,
                             std::vector<std::unique_ptr<kfd::KfdDevice>>& devices) {
    m.kernel->setCurrentPid(pid);
    devices.push_back(m.device(&store));
    devices.back()->setShareExchange(&shares);
    return devices.back()->restoreFile(fileId);
}

std::unique_ptr<hal::ImageStore> storeIn(TestMachine& m) {
    return hal::openDirectoryStore(m.dir / "").value();
}

uint64_t fileSize(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

/// The BO of `p` whose memory is `memory`'s (an import), or nullptr.
FakeBo* importOf(FakeProcess& p, const FakeBo& memory) {
    for (auto& bo : p.bos)
        if (bo->memoryOf.get() == &memory)
            return bo.get();
    return nullptr;
}

ProcessSpec oneVramBo(uint64_t size) {
    ProcessSpec spec;
    spec.bos.push_back({0, size, kVram});
    return spec;
}

/// Process 100 with a 64 KiB VRAM BO, imported by process 200 (one BO of `ownBytes` of its own).
struct TwoSharing {
    explicit TwoSharing(uint64_t ownBytes) {
        original = src.kernel->addProcess(100, oneVramBo(65536)).bos[0]->data;
        src.kernel->addProcess(200, oneVramBo(ownBytes));
        share(src, 100, 0, 200, kImportVa);
        store = storeIn(src);
    }
    TestMachine src{machineSpec(1)};
    std::unique_ptr<hal::ImageStore> store;
    std::vector<std::byte> original; ///< the bytes of the shared memory at dump
};

/// The machine restored onto, its tasks sharing one exchange.
struct RestoreSite {
    hal::Result<int> restore(hal::ImageStore& store, int pid, uint32_t fileId) {
        return restoreTask(dst, store, shares, pid, fileId, devices);
    }
    TestMachine dst{machineSpec(1)};
    FakeShareExchange shares{*dst.kernel};
    std::vector<std::unique_ptr<kfd::KfdDevice>> devices;
};

} // namespace

// ------------------------------------------------------------------------------ fake kernel

TEST(
    KfdShares,
    GivenAnImportedBo_WhenCheckpointed_ThenTheKernelReportsItWithImportFlagsAndTheExportersDmabuf) {
    TestMachine m(machineSpec(1));
    m.kernel->addProcess(100, oneVramBo(65536));
    m.kernel->addProcess(200, oneVramBo(4096));
    uint64_t handle = share(m, 100, 0, 200, kImportVa);
    FakeProcess* b = m.kernel->process(200);
    ASSERT_EQ(b->bos.size(), 2u);
    EXPECT_EQ(handle, kfd::makeMemHandle(kGpu, b->bos[1]->privTag));
    EXPECT_EQ(b->bos[1]->allocFlags, kfd::importedBoFlags(true));
    EXPECT_EQ(b->bos[1]->size, 65536u);

    int fd = kfdOf(m, 200);
    auto info = kfd::criuProcessInfo(*m.kernel, fd);
    ASSERT_TRUE(info.ok());
    auto data = kfd::criuCheckpoint(*m.kernel, fd, info.value());
    ASSERT_TRUE(data.ok()) << data.error().describe();
    const kfd_criu_bo_bucket& imported = data.value().bos[1];
    EXPECT_EQ(imported.addr, kImportVa);
    EXPECT_EQ(imported.alloc_flags, KFD_IOC_ALLOC_MEM_FLAGS_VRAM |
                                        KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
                                        KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE);
    auto key = kfd::dmabufShareKey(*m.kernel, static_cast<int>(imported.dmabuf_fd));
    ASSERT_TRUE(key.ok());
    EXPECT_EQ(key.value(), m.kernel->process(100)->bos[0]->ino) << "one dma-buf per memory";
    for (const auto& bo : data.value().bos)
        m.kernel->close(static_cast<int>(bo.dmabuf_fd));
    EXPECT_TRUE(kfd::criuUnpause(*m.kernel, fd).ok());
    m.kernel->close(fd);
}

TEST(KfdShares, GivenBadExportOrImportArguments_ThenTheFakeFailsAsTheKernelDoes) {
    TestMachine m(machineSpec(1));
    ProcessSpec spec = oneVramBo(4096);
    spec.bos.push_back({0, 8192, kDoorbell});
    m.kernel->addProcess(100, spec);
    m.kernel->addProcess(200, oneVramBo(4096));
    int fd = kfdOf(m, 100);
    kfd::ExportDmabufArgs ex = {};
    ex.handle = kfd::makeMemHandle(kGpu, 1);
    ex.flags = O_APPEND;
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(fd, kfd::kIocExportDmabuf, &ex)) << "flags";
    ex.flags = 0;
    ex.handle = kfd::makeMemHandle(kGpu, 2);
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(fd, kfd::kIocExportDmabuf, &ex)) << "a doorbell";
    ex.handle = kfd::makeMemHandle(kGpu, 9);
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(fd, kfd::kIocExportDmabuf, &ex)) << "no such handle";
    kfd_ioctl_import_dmabuf_args im = {};
    im.gpu_id = kGpu;
    im.dmabuf_fd = static_cast<uint32_t>(fd);
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(fd, AMDKFD_IOC_IMPORT_DMABUF, &im)) << "not a dma-buf";
    ex.handle = kfd::makeMemHandle(kGpu, 1);
    ASSERT_EQ(0, m.kernel->ioctl(fd, kfd::kIocExportDmabuf, &ex));
    im.dmabuf_fd = ex.dmabuf_fd;
    im.gpu_id = 0x4242;
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(fd, AMDKFD_IOC_IMPORT_DMABUF, &im)) << "no such GPU";
    m.kernel->setCurrentPid(200);
    im.gpu_id = kGpu;
    EXPECT_EQ(-EBADF, m.kernel->ioctl(fd, AMDKFD_IOC_IMPORT_DMABUF, &im)) << "another process";
    m.kernel->failCall("ioctl:IMPORT_DMABUF", EIO);
    EXPECT_EQ(-EIO, m.kernel->ioctl(fd, AMDKFD_IOC_IMPORT_DMABUF, &im));
    m.kernel->close(static_cast<int>(ex.dmabuf_fd));
    m.kernel->close(fd);
}

// ------------------------------------------------------------------------------ backend

TEST(KfdShares,
     GivenTwoProcessesSharingABo_WhenDumpedAndRestored_ThenItIsWrittenOnceAndSharedAgain) {
    TwoSharing two(12288);
    TestMachine& src = two.src;
    auto& store = two.store;
    dumpTree(src, *store, {{100, 10}, {200, 20}});

    // The shared memory is in the exporter's pages file only; the importer's holds its own BO.
    EXPECT_EQ(fileSize(src.dir / hal::kfdPagesImageName(10, kGpu)), 8u + 65536u);
    EXPECT_EQ(fileSize(src.dir / hal::kfdPagesImageName(20, kGpu)), 8u + 12288u);
    auto imgA = kfd::readKfdImage(*store, hal::kfdImageName(10));
    auto imgB = kfd::readKfdImage(*store, hal::kfdImageName(20));
    ASSERT_TRUE(imgA.ok() && imgB.ok());
    ASSERT_TRUE(imgA.value().bos[0].sharing && imgB.value().bos[1].sharing);
    EXPECT_FALSE(imgA.value().bos[0].isFollower());
    EXPECT_TRUE(imgB.value().bos[1].isFollower());
    EXPECT_FALSE(imgB.value().bos[0].isFollower());
    EXPECT_EQ(imgA.value().bos[0].sharing->key, imgB.value().bos[1].sharing->key);
    EXPECT_EQ(imgB.value().bos[1].shareOwnerFile, std::optional<uint32_t>(10));

    RestoreSite site;
    auto ra = site.restore(*store, 700, 10);
    ASSERT_TRUE(ra.ok()) << ra.error().describe();
    auto rb = site.restore(*store, 800, 20);
    ASSERT_TRUE(rb.ok()) << rb.error().describe();
    FakeProcess* a2 = site.dst.kernel->process(700);
    FakeProcess* b2 = site.dst.kernel->process(800);
    EXPECT_TRUE(a2->bos[0]->data == two.original);
    FakeBo* imported = importOf(*b2, *a2->bos[0]);
    ASSERT_NE(imported, nullptr) << "the importer holds the exporter's memory again";
    EXPECT_EQ(imported->addr, kImportVa);
    // A write through either process is seen by the other: one memory.
    a2->bos[0]->data[5] = std::byte{0x5a};
    EXPECT_EQ(imported->memory().data[5], std::byte{0x5a});
    imported->memory().data[9] = std::byte{0x33};
    EXPECT_EQ(a2->bos[0]->data[9], std::byte{0x33});
    for (auto& d : site.devices)
        EXPECT_TRUE(d->finishRestore(true).ok());
}

TEST(
    KfdShares,
    GivenTheOwnersImageIsMissing_WhenTheImporterIsRestored_ThenItFailsBeforeTheGpuNamingBoFileAndKey) {
    TwoSharing two(4096);
    dumpTree(two.src, *two.store, {{100, 10}, {200, 20}});
    auto img = kfd::readKfdImage(*two.store, hal::kfdImageName(20));
    ASSERT_TRUE(img.ok());
    std::filesystem::remove(two.src.dir / hal::kfdImageName(10));

    RestoreSite site;
    auto r = site.restore(*two.store, 800, 20);
    ASSERT_FALSE(r.ok());
    std::string msg = r.error().describe();
    EXPECT_NE(msg.find("BO 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find(hal::kfdImageName(20)), std::string::npos) << msg;
    EXPECT_NE(msg.find(hal::kfdImageName(10)), std::string::npos) << msg;
    EXPECT_NE(msg.find("share key " + std::to_string(img.value().bos[1].sharing->key)),
              std::string::npos)
        << msg;
    EXPECT_EQ(site.dst.kernel->process(800), nullptr) << "/dev/kfd was not even opened";
}

TEST(KfdShares, GivenTheOwnerIsNotRestored_WhenTheImporterIsRestored_ThenTheFetchErrorNamesTheBo) {
    TwoSharing two(4096);
    dumpTree(two.src, *two.store, {{100, 10}, {200, 20}});

    RestoreSite site;
    auto r = site.restore(*two.store, 800, 20);
    ASSERT_FALSE(r.ok());
    std::string msg = r.error().describe();
    EXPECT_NE(msg.find("BO 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("share key"), std::string::npos) << msg;
    EXPECT_TRUE(site.devices.back()->finishRestore(false).ok());
}

TEST(
    KfdShares,
    GivenAProcessImportingItsOwnBo_WhenDumpedAndRestored_ThenTheMemoryIsWrittenOnceAndSharedWithinIt) {
    TestMachine src(machineSpec(1));
    FakeProcess& a = src.kernel->addProcess(100, oneVramBo(65536));
    share(src, 100, 0, 100, kImportVa);
    auto original = a.bos[0]->data;
    auto store = storeIn(src);
    dumpTree(src, *store, {{100, 10}});
    EXPECT_EQ(fileSize(src.dir / hal::kfdPagesImageName(10, kGpu)), 8u + 65536u);

    RestoreSite site;
    auto r = site.restore(*store, 700, 10);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    FakeProcess* a2 = site.dst.kernel->process(700);
    EXPECT_TRUE(a2->bos[0]->data == original);
    FakeBo* imported = importOf(*a2, *a2->bos[0]);
    ASSERT_NE(imported, nullptr);
    EXPECT_EQ(imported->addr, kImportVa);
    EXPECT_EQ(site.shares.published, 1);
    EXPECT_TRUE(site.devices.back()->finishRestore(true).ok());
}

TEST(
    KfdShares,
    GivenProcessesCheckpointedOneByOne_WhenTheOwnersImageIsWrittenFirst_ThenTheImportKeepsItsOwnContents) {
    TwoSharing two(4096);
    TestMachine& src = two.src;
    auto& store = two.store;
    dumpFilesOnly(src, *store, {{100, 10}, {200, 20}});
    EXPECT_EQ(fileSize(src.dir / hal::kfdPagesImageName(20, kGpu)), 8u + 4096u + 65536u);
    auto imgA = kfd::readKfdImage(*store, hal::kfdImageName(10));
    auto imgB = kfd::readKfdImage(*store, hal::kfdImageName(20));
    ASSERT_TRUE(imgA.ok() && imgB.ok());
    EXPECT_FALSE(imgA.value().bos[0].sharing) << "no BO of the dump followed it in time";
    EXPECT_FALSE(imgB.value().bos[1].sharing);

    RestoreSite site;
    auto rb = site.restore(*store, 800, 20);
    ASSERT_TRUE(rb.ok()) << rb.error().describe();
    EXPECT_TRUE(site.dst.kernel->process(800)->bos[1]->data == two.original);
    EXPECT_EQ(site.shares.published, 0);
    EXPECT_TRUE(site.devices.back()->finishRestore(true).ok());
}

TEST(KfdShares, GivenAShareKeyOnABoWithoutContents_WhenTheImageIsRead_ThenItIsRefused) {
    TestMachine m(machineSpec(1));
    auto store = storeIn(m);
    kfd::KfdImage image;
    image.topology = m.topology;
    kfd::BoRecord bo{0x1000, 8192, 0, kGpu, kDoorbell, hal::BoSharing{77, false}, {}};
    image.bos.push_back(bo);
    image.privData = {1};
    ASSERT_TRUE(kfd::writeKfdImage(*store, "amdgpu-kfd-3.img", image).ok());
    auto r = kfd::readKfdImage(*store, "amdgpu-kfd-3.img");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("share key 77"), std::string::npos) << r.error().describe();
}
