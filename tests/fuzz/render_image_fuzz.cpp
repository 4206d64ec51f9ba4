// The render-node image (`amdgpu-renderD-<id>.img`, criu_render_node) through both readers:
// the KFD backend's (kfd::readRenderImageWithoutBos) and the HAL's (formats::readRenderNodeImage).
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "formats/render_node_image.h"
#include "kfd/kfd_images.h"

#include <cstdlib>

void fuzzOne(std::string_view input) {
    fuzzsupport::MemoryStore store;
    store.put(formats::renderNodeImageName(1), input);
    (void)kfd::readRenderImageWithoutBos(store, 1);
    (void)formats::readRenderNodeImage(store, 1);
}

std::vector<std::string> fuzzSeeds() {
    fuzzsupport::MemoryStore store;
    std::vector<std::string> seeds;
    auto take = [&](base::Result<void> written) {
        if (!written.ok())
            abort();
        seeds.push_back(store.images().at(formats::renderNodeImageName(1)));
    };
    formats::RenderNodeImage kfdShape; // what the KFD backend writes: the GPU, no BOs
    kfdShape.gpuId = 0x1000;
    kfdShape.id = 1;
    kfdShape.renderMinor = 128;
    take(formats::writeRenderNodeImage(store, kfdShape));
    formats::RenderNodeImage image;
    image.gpuId = 0x1111;
    image.id = 1;
    image.renderMinor = 129;
    image.privData = "queues"; // as another backend's state would be
    for (uint32_t i = 0; i < 3; ++i) {
        formats::DrmBoEntry bo;
        bo.addr = 0x7f0000000000ull + i * 0x10000;
        bo.size = 0x1000u << i;
        bo.offset = 0x100000ull * (i + 1);
        bo.allocFlags = i;
        bo.alignment = 0x1000;
        bo.preferredDomains = 1u << (i + 1);
        bo.handle = i + 1;
        bo.isImport = i == 2;
        bo.sharing = formats::BoSharing{i == 1 ? 0 : 0x5e1f00 + i, i == 2};
        bo.vms.push_back({0x800000000ull + i * 0x100000, bo.size, 0, 0xe});
        if (i != 1)
            bo.checksum = content::ContentChecksum{i == 0 ? content::DigestKind::Xxh3_64
                                                          : content::DigestKind::Fnv1a64,
                                                   0xcbf29ce484222325ull + i};
        image.bos.push_back(bo);
    }
    image.contexts = {{1, 0}, {3, 0x8}}; // 0x8: AMDGPU_CTX_QUERY2_FLAGS_RAS_CE
    image.syncobjs = {{1, true, std::nullopt}, {2, false, std::nullopt}, {4, false, 7}};
    take(formats::writeRenderNodeImage(store, image));
    return seeds;
}
