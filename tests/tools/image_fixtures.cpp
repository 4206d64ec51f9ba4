#include "image_fixtures.h"

#include "content/stream.h"
#include "formats/dmabuf_image.h"
#include "formats/framed_image.h"
#include "formats/render_node_image.h"
#include "formats/topology_codec.h"
#include "kfd/kfd_images.h"

#include <gtest/gtest.h>

#include <vector>

namespace imagetest {

std::string bytesOf(size_t n, uint8_t seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>(seed + i * 7);
    return s;
}

content::ContentChecksum checksumOf(const std::string& data) {
    content::ContentDigest d;
    d.update(std::as_bytes(std::span(data.data(), data.size())));
    return d.checksum();
}

void writeContents(formats::ImageStore& store, const std::string& name, const std::string& data) {
    auto w = formats::createFramedImage(store, name, data.size());
    ASSERT_TRUE(w.ok()) << w.error().describe();
    ASSERT_TRUE((*w)->write(std::as_bytes(std::span(data.data(), data.size()))).ok());
    ASSERT_TRUE((*w)->close().ok());
}

topology::SyntheticSpec twoGpus(uint64_t vram) {
    topology::SyntheticSpec spec;
    spec.gpus = 2;
    spec.vramBytes = vram;
    return spec;
}

void writeKfdCheckpoint(formats::ImageStore& store) {
    kfd::KfdImage image;
    image.pid = 4242;
    image.topology = topology::makeSyntheticTopology(twoGpus());
    image.bos = {{0x7f0000000000, 8192, 0x1000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_VRAM},
                 {0x7f0000100000, 4096, 0x2000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_GTT},
                 {0x7f0000200000, 4096, 0x3000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR},
                 {0x7f0000300000, 4096, 0x4000, kGpuB, KFD_IOC_ALLOC_MEM_FLAGS_VRAM}};
    image.numObjects = 3;
    image.privData = {1, 2, 3, 4};
    std::string a = bytesOf(8192, 1) + bytesOf(4096, 2), b = bytesOf(4096, 3);
    image.checksums = {{kGpuA, a.size(), checksumOf(a)}, {kGpuB, b.size(), checksumOf(b)}};
    ASSERT_TRUE(kfd::writeKfdImage(store, formats::kfdImageName(kKfdId), image).ok());
    writeContents(store, formats::kfdPagesImageName(kKfdId, kGpuA), a);
    writeContents(store, formats::kfdPagesImageName(kKfdId, kGpuB), b);
}

void writeKfdCheckpointIn(const std::string& dir) {
    auto store = formats::openDirectoryStore(dir);
    ASSERT_TRUE(store.ok()) << store.error().describe();
    writeKfdCheckpoint(**store);
}

void writeRenderCheckpoint(formats::ImageStore& store) {
    ASSERT_TRUE(
        formats::writeTopologyImage(store, topology::makeSyntheticTopology(twoGpus())).ok());
    formats::RenderNodeImage r;
    r.id = kRenderId;
    r.gpuId = kGpuB;
    r.renderMinor = kRenderMinor;
    std::vector<std::string> data = {bytesOf(4096, 9), bytesOf(8192, 10)};
    for (uint32_t i = 0; i < 3; ++i) {
        formats::DrmBoEntry bo;
        bo.handle = i + 1;
        bo.size = i < 2 ? data[i].size() : 4096;
        bo.preferredDomains = i == 0 ? 4 /* VRAM */ : i == 1 ? 2 /* GTT */ : 0x10 /* GWS */;
        bo.isImport = i == 1;
        bo.sharing = formats::BoSharing{i < 2 ? 0x77aau : 0u, i == 1}; // BO 1 imports BO 0's memory
        bo.vms.push_back({0x100000 * (i + 1), bo.size, 0, 0});
        if (i < 2) {
            bo.checksum = checksumOf(data[i]);
            writeContents(store, formats::drmPagesImageName(kRenderId, kRenderMinor, i), data[i]);
        }
        r.bos.push_back(bo);
    }
    r.contexts = {{1, 0}, {3, 0}};
    r.syncobjs = {{1, true, std::nullopt}, {2, false, std::nullopt}, {4, false, 7}};
    ASSERT_TRUE(formats::writeRenderNodeImage(store, r).ok());
    ASSERT_TRUE(formats::writeDmabufImage(store, {kDmabufId, 1, 77, kRenderId}).ok());
}

} // namespace imagetest
