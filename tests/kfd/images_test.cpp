// Images in CRIU's format: hand-encoded bytes from the schema, images of older writers, and
// truncated or inconsistent images (a clear error naming the file, nothing restored).
#include "kfd_test_machine.h"

#include "content/stream.h"
#include "formats/proto_image.h"
#include "kfd/kfd_images.h"

#include "criu-amdgpu.pb-c.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace fakekfd;
using ::testing::HasSubstr;

namespace {

// ------------------------------------------------------------ protobuf wire format by hand
std::string varint(uint64_t v) {
    std::string s;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        s.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
    } while (v);
    return s;
}
std::string tag(uint32_t field, uint32_t wireType) {
    return varint((field << 3) | wireType);
}
std::string vfield(uint32_t field, uint64_t v) {
    return tag(field, 0) + varint(v);
}
std::string lfield(uint32_t field, const std::string& bytes) {
    return tag(field, 2) + varint(bytes.size()) + bytes;
}
std::string withHeader(const std::string& payload) {
    uint64_t n = payload.size();
    return std::string(reinterpret_cast<const char*>(&n), 8) + payload;
}

/// criu_kfd as CRIU v4.2 writes it: kfd_bo_entry without `handle`.
std::string v42Image() {
    std::string cpu = vfield(1, 0) + vfield(2, 0) + vfield(3, 16);
    std::string gpu = vfield(1, 1) + vfield(2, 0x1000) + vfield(3, 0) + vfield(4, 104) +
                      vfield(18, 0x1002) + vfield(19, 0x740f) + vfield(21, 128) +
                      lfield(32, vfield(1, 2) + vfield(2, 0));
    std::string bo = vfield(1, 0x7f0000000000) + vfield(2, 8192) + vfield(3, 0x100000) +
                     vfield(4, KFD_IOC_ALLOC_MEM_FLAGS_VRAM) + vfield(5, 0x1000);
    return vfield(1, 42) + vfield(2, 1) + vfield(3, 1) + lfield(4, cpu) + lfield(4, gpu) +
           vfield(5, 1) + lfield(6, bo) + vfield(7, 2) + vfield(8, 0) + vfield(9, 0) +
           lfield(10, "xyz");
}

struct Field {
    uint32_t number;
    uint32_t wireType;
    std::string bytes; ///< the payload of a LEN field
};

/// Splits a message into its top-level fields.
std::vector<Field> parseFields(const std::string& msg) {
    std::vector<Field> out;
    size_t i = 0;
    auto readVarint = [&](uint64_t* v) {
        *v = 0;
        for (int shift = 0; i < msg.size(); shift += 7) {
            uint8_t b = static_cast<uint8_t>(msg[i++]);
            *v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80))
                return;
        }
    };
    while (i < msg.size()) {
        uint64_t key, v;
        readVarint(&key);
        Field f{static_cast<uint32_t>(key >> 3), static_cast<uint32_t>(key & 7), {}};
        if (f.wireType == 0) {
            readVarint(&v);
        } else if (f.wireType == 2) {
            readVarint(&v);
            f.bytes = msg.substr(i, v);
            i += v;
        } else {
            ADD_FAILURE() << "unexpected wire type " << f.wireType;
            break;
        }
        out.push_back(f);
    }
    return out;
}

void writeRaw(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

void dumpOne(TestMachine& m, formats::ImageStore& store) {
    ProcessSpec spec;
    spec.bos = {
        {0, 3 << 20, kVram}, {0, 8192, kGtt}, {1, 1 << 20, kVram}, {1, kDoorbellSlice, kDoorbell}};
    m.kernel->addProcess(200, spec);
    m.kernel->seize(200);
    auto dev = m.device(&store);
    hal::FileRef file = m.fileRef(200, 3, 5);
    auto r = dev->dumpFile(file);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_TRUE(dev->finishDump(true).ok());
    m.kernel->close(file.fd);
}

/// Restoring file 5 fails with an error containing `expect`; /dev/kfd was never even opened.
void expectRejected(TestMachine& src, formats::ImageStore& store, const std::string& expect) {
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(300);
    auto dev = dst.device(&store);
    auto r = dev->restoreFile(5);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr(expect));
    EXPECT_EQ(dst.kernel->process(300), nullptr) << "the restore went as far as the kernel";
    (void)src;
}

template <typename F> void mutateKfdImage(formats::ImageStore& store, F&& mutate) {
    auto msg =
        formats::readProtoImage<CriuKfd>(store, formats::kfdImageName(5), &criu_kfd__descriptor);
    ASSERT_TRUE(msg.ok());
    mutate(*msg.value());
    ASSERT_TRUE(formats::writeProtoImage(store, formats::kfdImageName(5), &msg.value()->base).ok());
}

/// Removes the image's checksums. The dropped entries are freed here: free_unpacked frees only
/// what the count names.
void dropPagesChecksums(CriuKfd& k) {
    for (size_t i = 0; i < k.n_pages_checksums; ++i)
        pages_checksum__free_unpacked(k.pages_checksums[i], nullptr);
    k.n_pages_checksums = 0;
}
} // namespace

TEST(KfdImages, GivenAV42ImageWithoutHandle_WhenRead_ThenEveryFieldIsDecoded) {
    testsupport::TempDir dir;
    writeRaw(dir / "amdgpu-kfd-3.img", withHeader(v42Image()));
    auto store = formats::openDirectoryStore(dir.path()).value();
    auto image = kfd::readKfdImage(*store, "amdgpu-kfd-3.img");
    ASSERT_TRUE(image.ok()) << image.error().describe();
    EXPECT_EQ(image->pid, 42u);
    ASSERT_EQ(image->bos.size(), 1u);
    EXPECT_EQ(image->bos[0].addr, 0x7f0000000000u);
    EXPECT_EQ(image->bos[0].size, 8192u);
    EXPECT_EQ(image->bos[0].offset, 0x100000u);
    EXPECT_EQ(image->bos[0].gpuId, 0x1000u);
    EXPECT_EQ(image->numObjects, 2u);
    EXPECT_EQ(image->privData, (std::vector<uint8_t>{'x', 'y', 'z'}));
    ASSERT_EQ(image->topology.gpus().size(), 1u);
    EXPECT_EQ(image->topology.gpus()[0]->renderMinor(), 128);
    EXPECT_TRUE(image->checksums.empty());
}

TEST(KfdImages, GivenAnImage_WhenWritten_ThenItsBytesFollowCriusSchema) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path()).value();
    kfd::KfdImage image;
    image.pid = 42;
    image.topology = topology::makeSyntheticTopology(machineSpec(1));
    image.bos.push_back({0x7f0000000000, 8192, 0x100000, 0x1000, KFD_IOC_ALLOC_MEM_FLAGS_VRAM});
    image.numObjects = 2;
    image.sharedMemSize = 4096;
    image.sharedMemMagic = 0x1234;
    image.privData = {'x', 'y', 'z'};
    image.checksums.push_back({0x1000, 8192, {content::DigestKind::Xxh3_64, 0xabcdef}});
    ASSERT_TRUE(kfd::writeKfdImage(*store, "amdgpu-kfd-3.img", image).ok());
    std::string file = testsupport::readFile(dir / "amdgpu-kfd-3.img");
    ASSERT_GT(file.size(), 8u);
    uint64_t header;
    memcpy(&header, file.data(), 8);
    EXPECT_EQ(header, file.size() - 8) << "8-byte host-endian size header";
    auto fields = parseFields(file.substr(8));
    std::vector<std::pair<uint32_t, uint32_t>> shape;
    for (const Field& f : fields)
        shape.emplace_back(f.number, f.wireType);
    // pid, num_of_gpus, num_of_cpus, device_entries (1 CPU + 1 GPU), num_of_bos, bo_entries,
    // num_of_objects, shared_mem_size, shared_mem_magic, priv_data, pages_checksums (100).
    std::vector<std::pair<uint32_t, uint32_t>> want = {{1, 0}, {2, 0}, {3, 0},  {4, 2},
                                                       {4, 2}, {5, 0}, {6, 2},  {7, 0},
                                                       {8, 0}, {9, 0}, {10, 2}, {100, 2}};
    EXPECT_EQ(shape, want);
    std::string bo = vfield(1, 0x7f0000000000) + vfield(2, 8192) + vfield(3, 0x100000) +
                     vfield(4, KFD_IOC_ALLOC_MEM_FLAGS_VRAM) + vfield(5, 0x1000) +
                     vfield(6, 0xffffffff);
    EXPECT_EQ(fields[6].bytes, bo) << "kfd_bo_entry, every field CRIU requires, handle included";
    EXPECT_EQ(fields[0].bytes, "");
    EXPECT_EQ(fields[10].bytes, "xyz");
    // The GPU's device entry carries gpu_id (2) and drm_render_minor (21).
    auto gpu = parseFields(fields[4].bytes);
    bool sawGpuId = false, sawMinor = false;
    for (const Field& f : gpu) {
        sawGpuId = sawGpuId || f.number == 2;
        sawMinor = sawMinor || f.number == 21;
    }
    EXPECT_TRUE(sawGpuId && sawMinor);
}

TEST(KfdImages, GivenAPerBoImage_WhenWrittenAndRead_ThenItsLayoutAndBoChecksumsComeBack) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path()).value();
    kfd::KfdImage image;
    image.topology = topology::makeSyntheticTopology(machineSpec(1));
    image.bos.push_back(
        {0x7f0000000000, 5ull << 32, 0x100000, 0x1000, KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
         content::ContentChecksum{content::DigestKind::Xxh3_64, 0x1234567890abcdefull}});
    image.bos.push_back({0x7f0100000000, 4096, 0x200000, 0x1000, KFD_IOC_ALLOC_MEM_FLAGS_GTT, {}});
    image.privData = {'x'};
    image.layout = kfd::ContentsLayout::PerBo;
    ASSERT_TRUE(kfd::writeKfdImage(*store, "amdgpu-kfd-3.img", image).ok());
    auto read = kfd::readKfdImage(*store, "amdgpu-kfd-3.img");
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(read->layout, kfd::ContentsLayout::PerBo);
    EXPECT_EQ(read->bos[0].size, 5ull << 32);
    EXPECT_EQ(read->bos[0].checksum, image.bos[0].checksum);
    EXPECT_FALSE(read->bos[1].checksum.has_value());

    // A layout this version does not know is refused naming the field.
    std::string file = testsupport::readFile(dir / "amdgpu-kfd-3.img");
    std::string body = file.substr(8) + vfield(101, 7);
    uint64_t size = body.size();
    testsupport::writeFile(dir / "amdgpu-kfd-4.img",
                           std::string(reinterpret_cast<const char*>(&size), 8) + body);
    auto bad = kfd::readKfdImage(*store, "amdgpu-kfd-4.img");
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.error().describe(), ::testing::HasSubstr("contents_layout 7"));
}

TEST(KfdImages, GivenARenderNodeImage_WhenWritten_ThenItHasCriusFields) {
    testsupport::TempDir dir;
    auto store = formats::openDirectoryStore(dir.path()).value();
    formats::RenderNodeImage image;
    image.gpuId = 0x1000;
    image.id = 9;
    image.renderMinor = 128;
    ASSERT_TRUE(formats::writeRenderNodeImage(*store, image).ok());
    std::string file = testsupport::readFile(dir / "amdgpu-renderD-9.img");
    EXPECT_EQ(file, withHeader(vfield(1, 0x1000) + vfield(2, 9) + vfield(3, 128) + vfield(4, 0)));
    // v4.2 wrote only gpu_id: still readable.
    writeRaw(dir / "amdgpu-renderD-8.img", withHeader(vfield(1, 0x2000)));
    auto old = kfd::readRenderImageWithoutBos(*store, 8);
    ASSERT_TRUE(old.ok()) << old.error().describe();
    EXPECT_EQ(old->gpuId, 0x2000u);
    writeRaw(dir / "amdgpu-renderD-7.img", withHeader(vfield(2, 1)));
    EXPECT_FALSE(kfd::readRenderImageWithoutBos(*store, 7).ok());
}

TEST(KfdImages, GivenARenderNodeImageListingBos_WhenRestored_ThenItIsRefusedSayingWhatRestoresIt) {
    // Written by the amdgpu-drm backend or CRIU's development-branch plugin: gpu_id, id, minor,
    // num_of_bos 1 and one drm_bo_entry. Restoring the fd alone would drop the buffer.
    TestMachine m(machineSpec(1));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    std::string vm = vfield(1, 0x7000000000) + vfield(2, 4096) + vfield(3, 0) + vfield(4, 0);
    std::string bo = vfield(1, 0x7000000000) + vfield(2, 4096) + vfield(3, 0x1000) + vfield(4, 0) +
                     vfield(5, 4096) + vfield(6, 4) + vfield(7, 1) + vfield(8, 0) + vfield(9, 1) +
                     lfield(10, vm);
    writeRaw(m.dir / "amdgpu-renderD-6.img",
             withHeader(vfield(1, 0x1000) + vfield(2, 6) + vfield(3, 128) + vfield(4, 1) +
                        lfield(5, bo)));
    auto dev = m.device(store.get());
    ASSERT_TRUE(dev->ownsImage(6).value());
    auto r = dev->restoreFile(6);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-renderD-6.img lists 1 buffer objects"));
    EXPECT_THAT(r.error().describe(), HasSubstr("backends=amdgpu-drm"));
    EXPECT_EQ(m.kernel->openFdCount(), 0u) << "a render node was opened anyway";
}

TEST(KfdImages, GivenNumOfBosDisagreeingWithTheEntries_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.num_of_bos = 7; });
    expectRejected(m, *store, "amdgpu-kfd-5.img is inconsistent: num_of_bos is 7 but it holds 4");
}

TEST(KfdImages, GivenABoOnAGpuNotInTheDeviceList_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.bo_entries[1]->gpu_id = 0xbeef; });
    expectRejected(m, *store, "BO 1 is on GPU 0xbeef, which is not in its device list");
}

TEST(KfdImages, GivenAnImageWithoutPrivData_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.has_priv_data = false; });
    expectRejected(m, *store, "lacks priv_data");
}

TEST(KfdImages, GivenATruncatedKfdImage_ThenRestoreIsRefusedNamingIt) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::string path = m.dir / "amdgpu-kfd-5.img";
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
    expectRejected(m, *store, "amdgpu-kfd-5.img");
}

TEST(KfdImages, GivenATruncatedPagesFile_ThenRestoreIsRefusedNamingIt) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::string path = m.dir / "amdgpu-pages-5-1000.img";
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4096);
    expectRejected(m, *store, "amdgpu-pages-5-1000.img is truncated: it holds");
}

TEST(KfdImages, GivenAPagesFileLongerThanItsBos_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::string path = m.dir / "amdgpu-pages-5-1111.img";
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + 1);
    expectRejected(m, *store, "amdgpu-pages-5-1111.img is too long");
}

/// Rewrites the 8-byte size header of pages file `name` in `dir`.
void setPagesHeader(const std::string& path, uint64_t header) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.write(reinterpret_cast<const char*>(&header), sizeof(header));
}

TEST(KfdImages, GivenEveryPagesFile_ThenItStartsWithTheSumOfItsGpusBoSizes) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    // dumpOne: GPU 0 has 3 MiB VRAM + 8 KiB GTT, GPU 1 has 1 MiB VRAM (and a doorbell).
    std::string gpu0 = testsupport::readFile(m.dir / "amdgpu-pages-5-1000.img");
    std::string gpu1 = testsupport::readFile(m.dir / "amdgpu-pages-5-1111.img");
    uint64_t h0, h1;
    memcpy(&h0, gpu0.data(), 8);
    memcpy(&h1, gpu1.data(), 8);
    EXPECT_EQ(h0, (3u << 20) + 8192u);
    EXPECT_EQ(gpu0.size(), 8 + h0);
    EXPECT_EQ(h1, 1u << 20);
    EXPECT_EQ(gpu1.size(), 8 + h1);
}

TEST(KfdImages, GivenAPagesHeaderThatIsNotTheSumOfItsBos_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    setPagesHeader(m.dir / "amdgpu-pages-5-1111.img", (1u << 20) - 4096);
    expectRejected(m, *store,
                   "amdgpu-pages-5-1111.img does not belong to its image: its size "
                   "header says 1044480 bytes, the 1 VRAM/GTT BOs of GPU 0x1111 hold "
                   "1048576");
}

TEST(KfdImages, GivenAPagesFileWithoutItsHeader_ThenRestoreIsRefused) {
    // The layout of this project before it followed CRIU's framing: contents only.
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::string path = m.dir / "amdgpu-pages-5-1111.img";
    writeRaw(path, testsupport::readFile(path).substr(8));
    expectRejected(m, *store, "amdgpu-pages-5-1111.img does not belong to its image");
}

TEST(KfdImages, GivenBoSizesWhoseSumWraps_ThenRestoreIsRefusedBeforeAnyFileIsRead) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    // 2^64 - 8192 + 8192 wraps to 0: a header of 0 must not pass.
    mutateKfdImage(*store, [](CriuKfd& k) {
        k.bo_entries[0]->size = ~uint64_t{0} - 8191;
        dropPagesChecksums(k);
    });
    setPagesHeader(m.dir / "amdgpu-pages-5-1000.img", 0);
    expectRejected(m, *store, "the BOs of GPU 0x1000 add up to more than 2^64 bytes");
}

TEST(KfdImages, GivenAGpuWithoutBos_WhenDumped_ThenItsPagesFileHoldsAHeaderOfZero) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    ProcessSpec spec;
    spec.bos = {{0, 8192, kVram}, {1, 8192, kUserptr}};
    m.kernel->addProcess(200, spec);
    m.kernel->seize(200);
    auto dev = m.device(store.get());
    hal::FileRef file = m.fileRef(200, 3, 5);
    ASSERT_TRUE(dev->dumpFile(file).ok());
    ASSERT_TRUE(dev->finishDump(true).ok());
    EXPECT_EQ(testsupport::readFile(m.dir / "amdgpu-pages-5-1111.img"), std::string(8, '\0'));

    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(301);
    auto restorer = dst.device(store.get());
    auto r = restorer->restoreFile(5);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(contentsOf(*dst.kernel->process(301)), contentsOf(*m.kernel->process(200)));

    std::filesystem::remove(m.dir / "amdgpu-pages-5-1111.img");
    expectRejected(m, *store, "the BO contents of GPU 0x1111 are missing");
}

TEST(KfdImages, GivenAMissingPagesFile_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::filesystem::remove(m.dir / "amdgpu-pages-5-1111.img");
    expectRejected(m, *store, "amdgpu-pages-5-1111.img");
}

TEST(KfdImages, GivenAFlippedByteInAPagesFile_ThenTheChecksumRefusesTheRestore) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    std::string path = m.dir / "amdgpu-pages-5-1000.img";
    ASSERT_TRUE(testsupport::flipByte(path, 12345));
    // Verified as it is copied (reading every pages file twice would double the restore's I/O):
    // the restore fails, its process never resumed.
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(300);
    auto dev = dst.device(store.get());
    auto r = dev->restoreFile(5);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(),
                HasSubstr("amdgpu-pages-5-1000.img is corrupt: its XXH3-64 checksum is"));
    EXPECT_THAT(r.error().describe(), HasSubstr("GPU 0x1000"));
    ASSERT_NE(dst.kernel->process(300), nullptr);
    EXPECT_FALSE(dst.kernel->process(300)->resumed);
}

/// Rewrites the pages checksums of image 5 as earlier versions wrote them: FNV-1a 64 of each
/// pages file's contents, plus `delta`.
void checksumsAsEarlierVersions(TestMachine& m, formats::ImageStore& store, uint64_t delta) {
    mutateKfdImage(store, [&](CriuKfd& k) {
        for (size_t i = 0; i < k.n_pages_checksums; ++i) {
            PagesChecksum* c = k.pages_checksums[i];
            std::string file =
                testsupport::readFile(m.dir / formats::kfdPagesImageName(5, c->gpu_id));
            content::Fnv1a64 fnv;
            fnv.update(std::as_bytes(std::span(file.data() + 8, file.size() - 8)));
            c->has_xxh3_64 = false;
            c->has_fnv1a64 = true;
            c->fnv1a64 = fnv.value() + delta;
        }
    });
}

TEST(KfdImages, GivenChecksumsOfAnEarlierVersion_WhenRestored_ThenTheyAreVerifiedWithFnv) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    checksumsAsEarlierVersions(m, *store, 0);
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(301);
    auto dev = dst.device(store.get());
    auto r = dev->restoreFile(5);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(contentsOf(*dst.kernel->process(301)), contentsOf(*m.kernel->process(200)));

    checksumsAsEarlierVersions(m, *store, 1);
    TestMachine again(machineSpec(2));
    again.kernel->setCurrentPid(302);
    auto bad = again.device(store.get())->restoreFile(5);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.error().describe(), HasSubstr("is corrupt: its FNV-1a 64 checksum is"));
}

TEST(KfdImages, GivenAChecksumOfTheWrongSize_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.pages_checksums[0]->size += 1; });
    expectRejected(m, *store, "its checksum covers");
}

TEST(KfdImages, GivenAChecksumOfAnUnknownGpu_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.pages_checksums[0]->gpu_id = 0x7777; });
    expectRejected(m, *store, "a pages checksum names GPU 0x7777");
}

TEST(KfdImages, GivenCountsOfGpusAndCpusDisagreeing_ThenRestoreIsRefused) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { k.num_of_gpus = 5; });
    expectRejected(m, *store, "device entries");
}

TEST(KfdImages, GivenImagesWithoutChecksums_WhenRestored_ThenTheyAreAccepted) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    mutateKfdImage(*store, [](CriuKfd& k) { dropPagesChecksums(k); });
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(301);
    auto dev = dst.device(store.get());
    auto r = dev->restoreFile(5);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(contentsOf(*dst.kernel->process(301)), contentsOf(*m.kernel->process(200)));
}

TEST(KfdImages, GivenNoImageForAnId_ThenTheDeviceDoesNotOwnIt) {
    TestMachine m(machineSpec(1));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    auto owns = dev->ownsImage(99);
    ASSERT_TRUE(owns.ok());
    EXPECT_FALSE(owns.value());
    EXPECT_FALSE(dev->restoreFile(99).ok());
}

TEST(KfdImages, GivenATooSmallMachine_WhenRestoring_ThenNoMappingIsReportedBeforeTheKernelIsAsked) {
    TestMachine m(machineSpec(2));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dumpOne(m, *store);
    TestMachine dst(machineSpec(1));
    dst.kernel->setCurrentPid(302);
    auto dev = dst.device(store.get());
    auto r = dev->restoreFile(5);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(dst.kernel->process(302), nullptr);
}
