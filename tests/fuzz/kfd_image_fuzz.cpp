// The KFD image (`amdgpu-kfd-<id>.img`, criu_kfd) and the checks of its contents files made
// before a restore (kfd::readKfdImage, kfd::restoreJobsOf). Input: the files format, the KFD
// image named amdgpu-kfd-1.img, the pages files beside it.
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "kfd_seeds.h"

#include "kfd/contents_lanes.h"
#include "kfd/kfd_images.h"

void fuzzOne(std::string_view input) {
    fuzzsupport::MemoryStore store;
    for (const auto& [name, bytes] : fuzzsupport::splitFiles(input).files)
        store.put(name, bytes);
    auto image = kfd::readKfdImage(store, formats::kfdImageName(1));
    if (image.ok())
        (void)kfd::restoreJobsOf(store, 1, *image, nullptr);
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    for (const fuzzsupport::MemoryStore& store : fuzzsupport::kfdSeedStores()) {
        fuzzsupport::Files files;
        for (const auto& [name, bytes] : store.images())
            files.files.emplace_back(name, bytes);
        seeds.push_back(fuzzsupport::joinFiles(files));
    }
    return seeds;
}
