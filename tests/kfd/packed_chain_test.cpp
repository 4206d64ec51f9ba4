// Compressed and incremental KFD checkpoints (issue 33): the contents in files of ours, one per
// BO (criu_kfd.contents_layout 1), written and read through the shared packed image, chunk record
// and chain code, in the SDMA lanes of the fake KFD; restored onto other gpu_ids, in the task and
// through parallel restore; a broken parent refused before any GPU is touched; a failed dump
// leaves the process running and its parent as it was.
#include "kfd_steps.h"
#include "loopback_handoff.h"
#include "test_keys.h"

#include "datapath/image_increment.h"
#include "formats/chunk_map.h"
#include "formats/image_chain.h"
#include "formats/image_tag.h"
#include "formats/packed_image.h"
#include "kfd/kfd_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace fakekfd;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

/// An image directory `name` of the machine's temporary directory.
std::unique_ptr<formats::ImageStore> storeIn(TestMachine& m, const std::string& name) {
    fs::create_directories(m.dir / name);
    return formats::openDirectoryStore(m.dir / name).value();
}

/// A process whose first BO on each GPU compresses (a repeated 64-byte pattern); the others are
/// random bytes.
FakeProcess& compressibleProcess(TestMachine& m, int pid, unsigned gpus) {
    FakeProcess& p = m.kernel->addProcess(pid, everyKindOfBo(gpus));
    for (auto& bo : p.bos)
        if (bo->size == 3 * 1024 * 1024 + 123)
            for (size_t i = 0; i < bo->data.size(); ++i)
                bo->data[i] = static_cast<std::byte>(i % 64);
    return p;
}

/// Bytes of the files of `dir` whose names start with `prefix`.
uint64_t bytesOf(const std::string& dir, const std::string& prefix) {
    uint64_t sum = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().starts_with(prefix))
            sum += e.file_size();
    return sum;
}

/// The chunk record of kKfdFileId in `dir`: bytes of BO contents "here" and in all.
std::pair<uint64_t, uint64_t> recordBytes(const std::string& dir) {
    std::string name = formats::chunkMapImageName(kKfdFileId);
    std::string bytes = testsupport::readFile(dir + "/" + name);
    auto map = formats::decodeChunkMap(bytes, name);
    EXPECT_TRUE(map.ok()) << map.error().describe();
    uint64_t here = 0, all = 0;
    for (const formats::BoChunks& bo : map->bos)
        for (size_t c = 0; c < bo.chunks.size(); ++c) {
            uint64_t size = std::min(bo.chunkSize, bo.key.size - c * bo.chunkSize);
            all += size;
            if (bo.chunks[c].place == formats::ChunkPlace::Here)
                here += size;
        }
    return {here, all};
}

/// Rewrites `bytes` bytes at the start of the first BO of each GPU.
void rewrite(FakeProcess& p, size_t bytes, uint8_t value) {
    for (auto& bo : p.bos)
        if (bo->size == 3 * 1024 * 1024 + 123)
            std::fill_n(bo->data.begin(), bytes, static_cast<std::byte>(value));
}

kfd::KfdImage kfdImageIn(formats::ImageStore& store) {
    auto image = kfd::readKfdImage(store, formats::kfdImageName(kKfdFileId));
    EXPECT_TRUE(image.ok()) << image.error().describe();
    return image.ok() ? *image : kfd::KfdImage{};
}

TEST(KfdPacked, GivenCompression_WhenDumpedAndRestoredOntoOtherGpus_ThenBytesMatchInFilesOfOurs) {
    for (const char* codec : {"lz4", "zstd:3"}) {
        SCOPED_TRACE(codec);
        TestMachine src(machineSpec(2));
        src.settings.contentCompression = codec;
        FakeProcess& p = compressibleProcess(src, 500, 2);
        auto store = storeIn(src, "ck");
        dump(src, *store, 500, true);
        for (uint32_t gpu : {0x1000u, 0x1111u})
            EXPECT_FALSE(store->exists(formats::kfdPagesImageName(kKfdFileId, gpu)))
                << "CRIU's plugin must find no pages file to read compressed bytes from";
        kfd::KfdImage image = kfdImageIn(*store);
        EXPECT_EQ(image.layout, kfd::ContentsLayout::PerBo);
        EXPECT_TRUE(
            store->exists(formats::packedImageName(kfd::kfdBoImageName(kKfdFileId, 0x1000, 0))));
        EXPECT_TRUE(image.bos[0].checksum.has_value());
        // 2 x 3 MiB of a repeated pattern and 2 x ~1.2 MiB of random bytes.
        EXPECT_LT(bytesOf(src.dir / "ck", "amdgpu-packed-"), 3u << 20);

        TestMachine dst(machineSpec(2, 0x3000, 150));
        Restored r = restore(dst, *store, 777, 2);
        ASSERT_GE(r.kfdFd, 0);
        FakeProcess* q = dst.kernel->process(777);
        ASSERT_NE(q, nullptr);
        expectSameBos(p, *q);
        EXPECT_EQ(q->bos[0]->actualGpuId, 0x3000u);
        ASSERT_TRUE(r.dev->resumeProcess(777).ok());
    }
}

// No downgrade (issue 52): a node with a private key restores only encrypted checkpoints, and
// CRIU's pages files (the layout a KFD image's unauthenticated contents_layout chooses) are never
// encrypted: refused, naming the key image and the option, before any GPU state is made, unless
// content-allow-plaintext allows checkpoints in the clear.
TEST(KfdPacked,
     GivenAPrivateKey_WhenACheckpointOfPagesFilesIsRestored_ThenRefusedUnlessPlaintextIsAllowed) {
    TestMachine src(machineSpec(2));
    testsupport::KeyFiles keys = testsupport::writeTestKeys(src.dir.path());
    FakeProcess& p = compressibleProcess(src, 500, 2);
    auto store = storeIn(src, "ck");
    dump(src, *store, 500, true);
    ASSERT_TRUE(store->exists(formats::kfdPagesImageName(kKfdFileId, 0x1000)));
    {
        TestMachine dst(machineSpec(2, 0x3000, 150));
        dst.kernel->setCurrentPid(777);
        dst.settings.contentPrivateKey = keys.privateKey;
        auto fresh = formats::openDirectoryStore(src.dir / "ck").value();
        auto fd = dst.device(fresh.get())->restoreFile(kKfdFileId);
        ASSERT_FALSE(fd.ok()) << "a checkpoint in the clear restored with a private key set";
        EXPECT_THAT(fd.error().describe(), HasSubstr("amdgpu-seal.img is missing"));
        EXPECT_THAT(fd.error().describe(), HasSubstr("content-allow-plaintext"));
        EXPECT_EQ(dst.kernel->process(777), nullptr) << "GPU state made before the refusal";
    }
    TestMachine dst(machineSpec(2, 0x3000, 150));
    dst.settings.contentPrivateKey = keys.privateKey;
    dst.settings.contentAllowPlaintext = true;
    auto fresh = formats::openDirectoryStore(src.dir / "ck").value();
    Restored r = restore(dst, *fresh, 777, 2);
    ASSERT_GE(r.kfdFd, 0);
    FakeProcess* q = dst.kernel->process(777);
    ASSERT_NE(q, nullptr);
    expectSameBos(p, *q);
    ASSERT_TRUE(r.dev->resumeProcess(777).ok());
}

TEST(
    KfdPacked,
    GivenEncryptionWithoutCompression_WhenDumped_ThenSealedInFilesOfOursAndRestoredOnlyWithTheKey) {
    TestMachine src(machineSpec(2));
    testsupport::KeyFiles keys = testsupport::writeTestKeys(src.dir.path());
    src.settings.contentEncryption = "aes-256-gcm";
    src.settings.contentCertificate = keys.certificate;
    FakeProcess& p = compressibleProcess(src, 500, 2);
    auto store = storeIn(src, "ck");
    dump(src, *store, 500, true);
    for (uint32_t gpu : {0x1000u, 0x1111u})
        EXPECT_FALSE(store->exists(formats::kfdPagesImageName(kKfdFileId, gpu)))
            << "an encrypted KFD dump must leave no pages file in the clear";
    EXPECT_EQ(kfdImageIn(*store).layout, kfd::ContentsLayout::PerBo);
    // The repeated pattern of BO 0 is nowhere in the clear.
    std::string packed = testsupport::readFile(
        src.dir / ("ck/" + formats::packedImageName(kfd::kfdBoImageName(kKfdFileId, 0x1000, 0))));
    std::string pattern;
    for (int i = 0; i < 256; ++i)
        pattern.push_back(static_cast<char>(i % 64));
    EXPECT_EQ(packed.find(pattern), std::string::npos);

    {
        TestMachine dst(machineSpec(2, 0x3000, 150));
        dst.kernel->setCurrentPid(777);
        auto fresh = formats::openDirectoryStore(src.dir / "ck").value();
        auto dev = dst.device(fresh.get());
        auto fd = dev->restoreFile(kKfdFileId);
        ASSERT_FALSE(fd.ok()) << "restored without the private key";
        EXPECT_THAT(fd.error().describe(), HasSubstr("content-private-key"));
        EXPECT_EQ(dst.kernel->process(777), nullptr) << "GPU state made before the key was read";
    }
    TestMachine dst(machineSpec(2, 0x3000, 150));
    dst.settings.contentPrivateKey = keys.privateKey;
    auto fresh = formats::openDirectoryStore(src.dir / "ck").value();
    Restored r = restore(dst, *fresh, 777, 2);
    ASSERT_GE(r.kfdFd, 0);
    FakeProcess* q = dst.kernel->process(777);
    ASSERT_NE(q, nullptr);
    expectSameBos(p, *q);
    ASSERT_TRUE(r.dev->resumeProcess(777).ok());
}

// The KFD image of an encrypted dump is tagged under its key (formats/image_tag.h): a BO's
// address edited in it by someone without the key is refused at restore, naming the image and
// its tag, before any GPU state is made.
TEST(KfdPacked, GivenABosAddressEditedInAnEncryptedDumpsMetadata_WhenRestored_ThenRefused) {
    TestMachine src(machineSpec(1));
    testsupport::KeyFiles keys = testsupport::writeTestKeys(src.dir.path());
    src.settings.contentEncryption = "aes-256-gcm";
    src.settings.contentCertificate = keys.certificate;
    compressibleProcess(src, 500, 1);
    auto store = storeIn(src, "ck");
    dump(src, *store, 500, true);
    auto plain = formats::openDirectoryStore(src.dir / "ck").value(); // no key: writes no tag
    kfd::KfdImage image = kfdImageIn(*plain);
    ASSERT_FALSE(image.bos.empty());
    image.bos[0].addr += 0x200000;
    std::string name = formats::kfdImageName(kKfdFileId);
    fs::remove(src.dir / ("ck/" + name));
    ASSERT_TRUE(kfd::writeKfdImage(*plain, name, image).ok());
    TestMachine dst(machineSpec(1));
    dst.kernel->setCurrentPid(777);
    dst.settings.contentPrivateKey = keys.privateKey;
    auto fresh = formats::openDirectoryStore(src.dir / "ck").value();
    auto dev = dst.device(fresh.get());
    auto fd = dev->restoreFile(kKfdFileId);
    ASSERT_FALSE(fd.ok()) << "restored with a BO's address edited";
    EXPECT_THAT(fd.error().describe(),
                HasSubstr(name + ": does not match its tag " + formats::imageTagName(name)));
    EXPECT_EQ(dst.kernel->process(777), nullptr) << "GPU state made before the image was checked";
}

TEST(KfdPacked,
     GivenADamagedPackedFile_WhenRestored_ThenTheChecksumFailsTheRestoreAndNothingResumes) {
    TestMachine src(machineSpec(1));
    src.settings.contentCompression = "lz4";
    compressibleProcess(src, 500, 1);
    auto store = storeIn(src, "ck");
    dump(src, *store, 500, true);
    // A stored-raw frame of random bytes: flip a byte in the middle of BO 1's contents.
    std::string name =
        src.dir / ("ck/" + formats::packedImageName(kfd::kfdBoImageName(kKfdFileId, 0x1000, 1)));
    ASSERT_TRUE(testsupport::flipByte(name, 8 + 16 + 1000));
    TestMachine dst(machineSpec(1));
    dst.kernel->setCurrentPid(777);
    auto dev = dst.device(store.get());
    auto fd = dev->restoreFile(kKfdFileId);
    ASSERT_FALSE(fd.ok());
    EXPECT_THAT(fd.error().describe(),
                HasSubstr(formats::packedImageName(kfd::kfdBoImageName(kKfdFileId, 0x1000, 1)) +
                          " is corrupt"));
    EXPECT_FALSE(dev->resumeProcess(777).ok());
}

/// ck1 (lz4, full), ck2 (against ck1, uncompressed), ck3 (against ck2, zstd): each rewrites the
/// first 64 KiB of the first BO of each GPU.
struct Chain {
    explicit Chain(unsigned gpus)
        : src(machineSpec(gpus)), p(&compressibleProcess(src, 500, gpus)) {
        src.settings.contentCompression = "lz4";
        ck1 = storeIn(src, "ck1");
        dump(src, *ck1, 500, true);
        rewrite(*p, 64 << 10, 0xa1);
        src.settings.contentCompression = "none";
        src.settings.parentImages = "../ck1";
        ck2 = storeIn(src, "ck2");
        dump(src, *ck2, 500, true);
        rewrite(*p, 64 << 10, 0xb2);
        src.settings.contentCompression = "zstd";
        src.settings.parentImages = "../ck2";
        ck3 = storeIn(src, "ck3");
        dump(src, *ck3, 500, true);
    }
    TestMachine src;
    FakeProcess* p;
    std::unique_ptr<formats::ImageStore> ck1, ck2, ck3;
};

TEST(KfdIncrement, GivenAChainOfThree_WhenRestoredOntoOtherGpus_ThenTheNewestBytesComeBack) {
    Chain c(2);
    auto [here2, all2] = recordBytes(c.src.dir / "ck2");
    EXPECT_GT(all2, 6u << 20);
    EXPECT_EQ(here2, 2u * (2u << 20)) << "one chunk of 2 MiB per GPU changed";
    EXPECT_EQ(recordBytes(c.src.dir / "ck3").first, here2);
    EXPECT_TRUE(
        c.ck2->exists(datapath::deltaImageName(kfd::kfdBoImageName(kKfdFileId, 0x1000, 0))));
    EXPECT_TRUE(c.ck3->exists(formats::packedImageName(
        datapath::deltaImageName(kfd::kfdBoImageName(kKfdFileId, 0x1111, 7)))));
    EXPECT_FALSE(c.ck2->exists(formats::kfdPagesImageName(kKfdFileId, 0x1000)));

    TestMachine dst(machineSpec(2, 0x3000, 150));
    Restored r = restore(dst, *c.ck3, 777, 2);
    ASSERT_GE(r.kfdFd, 0);
    FakeProcess* q = dst.kernel->process(777);
    ASSERT_NE(q, nullptr);
    expectSameBos(*c.p, *q);
    EXPECT_EQ(static_cast<uint8_t>(q->bos[0]->data[0]), 0xb2);
}

TEST(KfdIncrement, GivenAChainOfThree_WhenRestoredInParallel_ThenCriusMainProcessAssemblesIt) {
    Chain c(2);
    TestMachine dst(machineSpec(2, 0x3000, 150));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    auto main = dst.device(c.ck3.get());
    auto worker = testsupport::parallelRestoreOn(*main, 2 << 20);
    worker->start(handoff.source());
    dst.kernel->setCurrentPid(901);
    auto task = dst.device(c.ck3.get());
    task->setContentHandoff(&handoff);
    ASSERT_TRUE(task->restoreFile(kKfdFileId).ok());
    EXPECT_EQ(handoff.sent(), 2u) << "one job per GPU";
    auto finished = worker->finish();
    ASSERT_TRUE(finished.ok()) << finished.error().describe();
    EXPECT_EQ(worker->jobsRun(), 2u);
    FakeProcess* q = dst.kernel->process(901);
    ASSERT_NE(q, nullptr);
    expectSameBos(*c.p, *q);
}

TEST(KfdIncrement, GivenAMissingOrChangedParent_WhenRestored_ThenRefusedBeforeAnyGpuIsTouched) {
    Chain c(1);
    std::string record = c.src.dir / ("ck1/" + formats::chunkMapImageName(kKfdFileId));
    std::string saved = testsupport::readFile(record);
    for (bool missing : {true, false}) {
        SCOPED_TRACE(missing ? "missing" : "changed");
        if (missing)
            fs::remove(record);
        else
            testsupport::writeFile(record, saved + "x");
        TestMachine dst(machineSpec(1));
        dst.kernel->setCurrentPid(777);
        auto dev = dst.device(c.ck3.get());
        auto fd = dev->restoreFile(kKfdFileId);
        ASSERT_FALSE(fd.ok());
        EXPECT_THAT(fd.error().describe(), HasSubstr(formats::chunkMapImageName(kKfdFileId)));
        EXPECT_EQ(dst.kernel->process(777), nullptr) << "RESTORE was called";
        EXPECT_EQ(dst.kernel->copyPackets(), 0u);
    }
}

TEST(KfdIncrement, GivenParentImagesNamingACriuLayoutDump_WhenPaused_ThenRefusedAndNotPaused) {
    TestMachine src(machineSpec(1));
    FakeProcess& p = src.kernel->addProcess(500, everyKindOfBo(1));
    auto ck1 = storeIn(src, "ck1");
    dump(src, *ck1, 500, true);
    EXPECT_TRUE(ck1->exists(formats::kfdPagesImageName(kKfdFileId, 0x1000)));
    EXPECT_FALSE(ck1->exists(formats::chunkMapImageName(kKfdFileId)))
        << "a full uncompressed dump is CRIU's layout: pages files only";
    src.settings.parentImages = "../ck1";
    auto ck2 = storeIn(src, "ck2");
    src.kernel->seize(500);
    auto dev = src.device(ck2.get());
    auto paused = dev->pauseProcess(500);
    ASSERT_FALSE(paused.ok());
    EXPECT_THAT(paused.error().describe(), HasSubstr("option parent-images"));
    EXPECT_FALSE(p.paused);
}

TEST(KfdIncrement,
     GivenCriusParentLinkToACriuLayoutDump_WhenDumped_ThenItIsAFullDumpInCriusLayout) {
    TestMachine src(machineSpec(1));
    src.kernel->addProcess(500, everyKindOfBo(1));
    auto ck1 = storeIn(src, "ck1");
    dump(src, *ck1, 500, true);
    auto ck2 = storeIn(src, "ck2");
    fs::create_directory_symlink("../ck1", src.dir / "ck2/parent");
    dump(src, *ck2, 500, true);
    EXPECT_TRUE(ck2->exists(formats::kfdPagesImageName(kKfdFileId, 0x1000)));
    EXPECT_EQ(kfdImageIn(*ck2).layout, kfd::ContentsLayout::PagesPerGpu);
}

TEST(KfdIncrement, GivenCriusParentLinkToOurDump_WhenDumped_ThenItIsIncremental) {
    TestMachine src(machineSpec(1));
    src.settings.contentCompression = "lz4";
    FakeProcess& p = compressibleProcess(src, 500, 1);
    auto ck1 = storeIn(src, "ck1");
    dump(src, *ck1, 500, true);
    src.settings.contentCompression = "none";
    auto ck2 = storeIn(src, "ck2");
    fs::create_directory_symlink("../ck1", src.dir / "ck2/parent");
    dump(src, *ck2, 500, true);
    EXPECT_EQ(recordBytes(src.dir / "ck2").first, 0u) << "nothing changed";
    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *ck2, 777, 1);
    ASSERT_GE(r.kfdFd, 0);
    expectSameBos(p, *dst.kernel->process(777));
}

TEST(KfdIncrement,
     GivenAFaultDuringAnIncrementalCompressedDump_ThenTheProcessRunsAndTheParentIsUntouched) {
    for (auto [call, nth] :
         {std::pair{"submitSdma", 2}, {"boImportDmabuf", 3}, {"ioctl:CHECKPOINT", 1}}) {
        SCOPED_TRACE(call);
        TestMachine src(machineSpec(2));
        src.settings.contentCompression = "lz4";
        FakeProcess& p = compressibleProcess(src, 500, 2);
        auto ck1 = storeIn(src, "ck1");
        dump(src, *ck1, 500, true);
        auto before = testsupport::readDirectoryFiles(src.dir / "ck1");
        src.settings.contentCompression = "zstd:5";
        src.settings.parentImages = "../ck1";
        auto ck2 = storeIn(src, "ck2");
        src.kernel->seize(500);
        auto dev = src.device(ck2.get());
        ASSERT_TRUE(dev->pauseProcess(500).value());
        src.kernel->failCall(call, EIO, nth);
        auto ck = dev->checkpointProcess(500);
        base::Result<void> r = ck;
        if (ck.ok())
            r = dev->dumpFile(src.fileRef(500, 3, kKfdFileId));
        ASSERT_FALSE(r.ok());
        ASSERT_TRUE(dev->finishDump(false).ok());
        EXPECT_FALSE(p.paused);
        EXPECT_EQ(testsupport::readDirectoryFiles(src.dir / "ck1"), before);
        EXPECT_FALSE(ck2->exists(formats::chunkMapImageName(kKfdFileId)));
        EXPECT_FALSE(ck2->exists(formats::kfdImageName(kKfdFileId)));
    }
}

} // namespace
