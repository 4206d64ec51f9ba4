#include "kfd_seeds.h"

#include "content/digest.h"
#include "kfd/kfd_images.h"
#include "topology/synth.h"

#include <cstdlib>

namespace fuzzsupport {

std::vector<MemoryStore> kfdSeedStores() {
    std::vector<MemoryStore> out;
    for (unsigned gpus : {1u, 2u}) {
        for (bool checksums : {true, false}) {
            topology::SyntheticSpec spec;
            spec.gpus = gpus;
            spec.hives = gpus > 1 ? 1 : 0;
            kfd::KfdImage image;
            image.pid = 4242;
            image.topology = topology::makeSyntheticTopology(spec);
            image.numObjects = 3;
            image.sharedMemSize = 4096;
            image.sharedMemMagic = 0x4e4f4d52;
            image.privData = {1, 2, 3, 4, 5, 6, 7, 8};
            MemoryStore store;
            for (const topology::Node* gpu : image.topology.gpus()) {
                const uint32_t flags[] = {KFD_IOC_ALLOC_MEM_FLAGS_VRAM, KFD_IOC_ALLOC_MEM_FLAGS_GTT,
                                          KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL};
                std::string pages;
                for (size_t i = 0; i < std::size(flags); ++i) {
                    kfd::BoRecord bo;
                    bo.addr = 0x7f0000000000ull + gpu->gpuId * 0x100000ull + i * 0x1000;
                    bo.size = 64 << i;
                    bo.offset = 0x100000ull * (i + 1);
                    bo.gpuId = gpu->gpuId;
                    bo.allocFlags = flags[i];
                    image.bos.push_back(bo);
                    if (kfd::boHasContents(flags[i]))
                        pages += std::string(bo.size, static_cast<char>('a' + i));
                }
                content::ContentDigest digest;
                digest.update(std::as_bytes(std::span(pages.data(), pages.size())));
                if (checksums)
                    image.checksums.push_back({gpu->gpuId, pages.size(), digest.checksum()});
                store.put(formats::kfdPagesImageName(1, gpu->gpuId), pages);
            }
            if (!kfd::writeKfdImage(store, formats::kfdImageName(1), image).ok())
                abort();
            out.push_back(std::move(store));
        }
    }
    return out;
}

} // namespace fuzzsupport
