// Small parts: VMA records, mapping paths, libhsakmt's shared memory, names.
#include "bounded_child.h"
#include "kfd_test_machine.h"

#include "kfd/hsakmt_shm.h"
#include "kfd/kfd_criu.h"
#include "kfd/vma_records.h"

#include <gtest/gtest.h>

#include <semaphore.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>

TEST(KfdVma, GivenMappingPaths_ThenTheirDevicesAreKnown) {
    EXPECT_EQ(kfd::vmaDeviceOfPath("/dev/kfd"), kfd::kKfdVmaDevice);
    EXPECT_EQ(kfd::vmaDeviceOfPath("/dev/dri/renderD129"), 129);
    EXPECT_EQ(kfd::vmaDeviceOfPath("renderD130"), 130);
    EXPECT_FALSE(kfd::vmaDeviceOfPath("/dev/dri/renderD").has_value());
    EXPECT_FALSE(kfd::vmaDeviceOfPath("/dev/dri/renderD12x").has_value());
    EXPECT_FALSE(kfd::vmaDeviceOfPath("/dev/dri/card0").has_value());
}

TEST(KfdVma, GivenTwoGpusWithTheSameOffset_ThenRecordsKeepThemApart) {
    kfd::VmaRecords records;
    records.add(128, 0x1000, 0x5000, {0x9000, 3});
    records.add(129, 0x1000, 0x5000, {0xa000, 4});
    EXPECT_EQ(records.size(), 2u);
    EXPECT_EQ(records.find(128, 0x1000, 0x5000)->newOffset, 0x9000u);
    EXPECT_EQ(records.find(129, 0x1000, 0x5000)->fd, 4);
    EXPECT_FALSE(records.find(130, 0x1000, 0x5000).has_value());
    EXPECT_FALSE(records.find(128, 0x2000, 0x5000).has_value());
}

TEST(KfdVma, GivenARecordAtAnAddress_ThenItIsFoundThereWhateverTheOffset) {
    kfd::VmaRecords records;
    records.add(128, 0x1000, 0x7000, {0x9000, 3, "amdgpu-kfd-5.img"});
    records.add(128, 0x1000, 0x5000, {0xa000, 4, "amdgpu-kfd-5.img"});
    records.add(129, 0x2000, 0x5000, {0xb000, 5, "amdgpu-kfd-5.img"});
    auto at = records.findAt(128, 0x1000);
    ASSERT_TRUE(at.has_value());
    EXPECT_EQ(at->oldOffset, 0x5000u);
    EXPECT_EQ(at->target.newOffset, 0xa000u);
    EXPECT_EQ(at->target.image, "amdgpu-kfd-5.img");
    EXPECT_FALSE(records.findAt(129, 0x1000).has_value());
    EXPECT_FALSE(records.findAt(128, 0x2000).has_value());
    EXPECT_FALSE(records.findAt(128, 0xfff).has_value());
}

TEST(KfdShm, GivenNoSegment_ThenNothingIsSavedAndNothingRestored) {
    testsupport::TempDir dir;
    auto shm = kfd::readHsakmtShm(dir.path());
    ASSERT_TRUE(shm.ok());
    EXPECT_FALSE(shm.value().has_value());
    EXPECT_TRUE(kfd::restoreHsakmtShm(dir.path(), {0, 0}).ok());
    EXPECT_TRUE(testsupport::readFile(dir / kfd::kHsakmtSemName).empty());
}

TEST(KfdShm, GivenASegment_ThenSizeAndMagicRoundTripAndTheSemaphoreWorks) {
    testsupport::TempDir src, dst;
    std::string seg(4096, 'x');
    uint32_t magic = 0xfeedf00d;
    memcpy(seg.data(), &magic, 4);
    testsupport::writeFile(src / kfd::kHsakmtShmName, seg);
    auto shm = kfd::readHsakmtShm(src.path());
    ASSERT_TRUE(shm.ok() && shm.value().has_value());
    EXPECT_EQ(shm.value()->size, 4096u);
    EXPECT_EQ(shm.value()->magic, magic);
    ASSERT_TRUE(kfd::restoreHsakmtShm(dst.path(), *shm.value()).ok());
    auto again = kfd::readHsakmtShm(dst.path());
    EXPECT_EQ(again.value()->size, 4096u);
    EXPECT_EQ(again.value()->magic, magic);
    // An existing segment and semaphore are kept.
    ASSERT_TRUE(kfd::restoreHsakmtShm(dst.path(), *shm.value()).ok());
    std::string sem = testsupport::readFile(dst / kfd::kHsakmtSemName);
    ASSERT_EQ(sem.size(), sizeof(sem_t));
    sem_t s;
    memcpy(&s, sem.data(), sizeof(s));
    int value = -1;
    sem_getvalue(&s, &value);
    EXPECT_EQ(value, 1);
}

TEST(KfdShm, GivenAnUnwritableDirectory_ThenTheErrorNamesTheFile) {
    auto r = kfd::restoreHsakmtShm("/nonexistent-dir-kfd-test", {4096, 1});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("hsakmt_shared_mem"), std::string::npos);
}

// /dev/shm is world-writable and the plugin runs as root: what another user planted there must
// not be followed, waited on or resized by the restore.
TEST(KfdShm, GivenASymlinkAtTheSegment_ThenRestoreRefusesItAndLeavesItsTargetAlone) {
    testsupport::TempDir dir;
    std::string target = dir / "precious";
    testsupport::writeFile(target, "keep");
    ASSERT_EQ(symlink(target.c_str(), (dir / kfd::kHsakmtShmName).c_str()), 0);
    auto r = kfd::restoreHsakmtShm(dir.path(), {4096, 0x1234});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("hsakmt_shared_mem is a symbolic link"), std::string::npos)
        << r.error().describe();
    EXPECT_EQ(testsupport::readFile(target), "keep");
    auto read = kfd::readHsakmtShm(dir.path());
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().describe().find("symbolic link"), std::string::npos);
}

TEST(KfdShm, GivenAFifoAtTheSegment_ThenReadingRefusesItAtOnce) {
    testsupport::TempDir dir;
    std::string fifo = dir / kfd::kHsakmtShmName;
    ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
    std::string outcome = testsupport::runBounded([&] {
        auto r = kfd::readHsakmtShm(dir.path());
        return r.ok() ? std::string("read") : r.error().describe();
    });
    EXPECT_NE(outcome.find("hsakmt_shared_mem is not a regular file"), std::string::npos)
        << outcome;
}

TEST(KfdShm, GivenASegmentSizeBeyondLibhsakmtsFromTheImage_ThenNothingIsCreated) {
    testsupport::TempDir dir;
    auto r = kfd::restoreHsakmtShm(dir.path(), {kfd::kMaxHsakmtShmSize + 1, 0x1234});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Image);
    EXPECT_NE(r.error().describe().find("1048577 bytes"), std::string::npos);
    struct stat st;
    EXPECT_NE(lstat((dir / kfd::kHsakmtShmName).c_str(), &st), 0);
    EXPECT_TRUE(kfd::restoreHsakmtShm(dir.path(), {kfd::kMaxHsakmtShmSize, 0x1234}).ok());
}

TEST(KfdShm, GivenASymlinkAtTheSemaphore_ThenRestoreRefusesIt) {
    testsupport::TempDir dir;
    ASSERT_EQ(symlink("/dev/null", (dir / kfd::kHsakmtSemName).c_str()), 0);
    auto r = kfd::restoreHsakmtShm(dir.path(), {8, 0x1234});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("sem.hsakmt_semaphore is not a regular file"),
              std::string::npos);
}

TEST(KfdNames, GivenFlagsAndOps_ThenMessagesNameThem) {
    EXPECT_STREQ(kfd::boKindName(KFD_IOC_ALLOC_MEM_FLAGS_VRAM), "VRAM");
    EXPECT_STREQ(kfd::boKindName(KFD_IOC_ALLOC_MEM_FLAGS_GTT), "GTT");
    EXPECT_STREQ(kfd::boKindName(KFD_IOC_ALLOC_MEM_FLAGS_USERPTR), "USERPTR");
    EXPECT_STREQ(kfd::boKindName(KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL), "DOORBELL");
    EXPECT_STREQ(kfd::boKindName(KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP), "MMIO_REMAP");
    EXPECT_STREQ(kfd::boKindName(0), "?");
    EXPECT_STREQ(kfd::criuOpName(KFD_CRIU_OP_PROCESS_INFO), "PROCESS_INFO");
    EXPECT_STREQ(kfd::criuOpName(KFD_CRIU_OP_CHECKPOINT), "CHECKPOINT");
    EXPECT_STREQ(kfd::criuOpName(KFD_CRIU_OP_UNPAUSE), "UNPAUSE");
    EXPECT_STREQ(kfd::criuOpName(KFD_CRIU_OP_RESTORE), "RESTORE");
    EXPECT_STREQ(kfd::criuOpName(KFD_CRIU_OP_RESUME), "RESUME");
    EXPECT_STREQ(kfd::criuOpName(99), "unknown op");
    kfd::KernelFd a;
    EXPECT_FALSE(a.valid());
    a.reset();
}

namespace {

/// A process 7 under `proc` (a temp dir as PROCROOT) whose /dev/shm links to the absolute
/// `hostDir`: a segment of 8192 bytes there on the host, one of 4096 at that path in its root.
void processWithShmLinkedTo(const std::string& proc, const std::string& hostDir) {
    std::string root = proc + "/7/root";
    std::filesystem::create_directories(root + "/dev");
    std::filesystem::create_directory_symlink(hostDir, root + "/dev/shm");
    testsupport::writeFile(hostDir + "/" + kfd::kHsakmtShmName, std::string(8192, 'h'));
    testsupport::writeFile(root + hostDir + "/" + kfd::kHsakmtShmName, std::string(4096, 'r'));
}

/// readProcessHsakmtShm of process 7 with openat2 refused (as before Linux 5.6) or not.
base::Result<std::optional<kfd::HsakmtShm>> readProcess7(const std::string& proc,
                                                         bool withoutOpenat2) {
    kfd::hsakmtShmWithoutOpenat2 = withoutOpenat2;
    auto r = kfd::readProcessHsakmtShm(proc, 7);
    kfd::hsakmtShmWithoutOpenat2 = false;
    return r;
}

} // namespace

TEST(KfdShm, GivenTheProcessesDevShmAnAbsoluteLink_WhenRead_ThenItResolvesInItsRoot) {
    testsupport::TempDir dir;
    processWithShmLinkedTo(dir / "proc", dir / "host");
    auto r = readProcess7(dir / "proc", false);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ((*r)->size, 4096u);
}

TEST(KfdShm, GivenTheProcessesDevShmAnAbsoluteLink_WhenOpenat2IsRefused_ThenItIsRefusedUnfollowed) {
    testsupport::TempDir dir;
    processWithShmLinkedTo(dir / "proc", dir / "host");
    auto r = readProcess7(dir / "proc", true);
    ASSERT_FALSE(r.ok()) << "read a segment of " << (*r ? (*r)->size : 0) << " bytes";
    EXPECT_NE(r.error().describe().find("/7/root/dev/shm/hsakmt_shared_mem: the process's /shm on "
                                        "the way is a symbolic link"),
              std::string::npos)
        << r.error().describe();
}

TEST(KfdShm, GivenAPlainDevShm_WhenOpenat2IsRefused_ThenTheSegmentIsReadComponentByComponent) {
    testsupport::TempDir dir;
    std::string shm = dir / "proc/7/root/dev/shm";
    std::filesystem::create_directories(shm);
    std::string seg(4096, '\0');
    uint32_t magic = 0x4b4d5348;
    memcpy(seg.data(), &magic, 4);
    testsupport::writeFile(shm + "/" + kfd::kHsakmtShmName, seg);
    auto r = readProcess7(dir / "proc", true);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ((*r)->size, 4096u);
    EXPECT_EQ((*r)->magic, magic);
    std::filesystem::remove(shm + "/" + kfd::kHsakmtShmName);
    auto none = readProcess7(dir / "proc", true);
    ASSERT_TRUE(none.ok()) << none.error().describe();
    EXPECT_FALSE(none->has_value());
}

TEST(KfdShm, GivenAFifoAtTheProcessesSegment_WhenOpenat2IsRefused_ThenItIsRefusedAtOnce) {
    testsupport::TempDir dir;
    std::string shm = dir / "proc/7/root/dev/shm";
    std::filesystem::create_directories(shm);
    ASSERT_EQ(mkfifo((shm + "/" + kfd::kHsakmtShmName).c_str(), 0666), 0);
    std::string outcome = testsupport::runBounded([&] {
        auto r = readProcess7(dir / "proc", true);
        return r.ok() ? std::string("read") : r.error().describe();
    });
    EXPECT_NE(outcome.find("hsakmt_shared_mem is not a regular file"), std::string::npos)
        << outcome;
}
