// The incremental chunk record (formats/chunk_map.h): decoded, and what decodes re-encodes to the
// same bytes.
#include "fuzz_target.h"

#include "formats/chunk_map.h"

#include <cstdlib>

void fuzzOne(std::string_view input) {
    auto map = formats::decodeChunkMap(input, "amdgpu-chunks-1.img");
    if (map.ok() && formats::encodeChunkMap(map.value()) != input)
        abort();
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    formats::ChunkMap empty;
    seeds.push_back(formats::encodeChunkMap(empty));
    formats::ChunkMap map;
    map.parent = "../dump-1";
    map.parentRecord = {0x1111, 0x2222};
    std::string bytes(3 * 4096 + 17, 'a');
    bytes[5000] = 'b';
    map.bos.push_back(formats::sumChunks({0x1234, 0x7f0000000000, bytes.size()}, 4096,
                                         std::as_bytes(std::span(bytes.data(), bytes.size()))));
    map.bos[0].chunks[0].place = formats::ChunkPlace::InParent;
    map.bos.push_back(formats::sumChunks({0x5678, 0x1000, 0}, 2 << 20, {}));
    seeds.push_back(formats::encodeChunkMap(map));
    return seeds;
}
