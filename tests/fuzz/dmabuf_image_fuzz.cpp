// The dmabuf image (criu_dmabuf_node), read through the HAL's protobuf image reader.
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "formats/proto_image.h"

#include "criu-amdgpu.pb-c.h"

#include <cstdlib>

namespace {
constexpr const char* kName = "amdgpu-dmabuf-1.img";
} // namespace

void fuzzOne(std::string_view input) {
    fuzzsupport::MemoryStore store;
    store.put(kName, input);
    (void)formats::readProtoImage<CriuDmabufNode>(store, kName, &criu_dmabuf_node__descriptor);
}

std::vector<std::string> fuzzSeeds() {
    fuzzsupport::MemoryStore store;
    std::vector<std::string> seeds;
    for (uint32_t handle : {1u, 0xffffffffu}) {
        CriuDmabufNode msg;
        criu_dmabuf_node__init(&msg);
        msg.has_gem_handle = true;
        msg.gem_handle = handle;
        if (!formats::writeProtoImage(store, kName, &msg.base).ok())
            abort();
        seeds.push_back(store.images().at(kName));
    }
    return seeds;
}
