// Crafts the chain of an incremental checkpoint as a hostile registry could (scenario
// hostile_restore):
//   e2e-chain-craft RECORD PARENT [PARENT_RECORD]
// rewrites the chunk record RECORD (amdgpu-chunks-ID.img) to name PARENT as its parent, with the
// checksum of the file PARENT_RECORD as the parent's (zeros without one), keeping everything else.
#include "formats/chunk_map.h"
#include "temp_dir.h"

#include <filesystem>
#include <iostream>
#include <span>

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::cerr << "usage: e2e-chain-craft RECORD PARENT [PARENT_RECORD]\n";
        return 2;
    }
    std::string record = std::filesystem::absolute(argv[1]).string();
    auto map = formats::decodeChunkMap(testsupport::readFile(record), record);
    if (!map.ok()) {
        std::cerr << map.error().describe() << "\n";
        return 1;
    }
    map->parent = argv[2];
    map->parentRecord = {};
    if (argc == 4) {
        std::string parentBytes = testsupport::readFile(argv[3]);
        map->parentRecord =
            formats::chunkSumOf(std::as_bytes(std::span(parentBytes.data(), parentBytes.size())));
    }
    testsupport::writeFile(record, formats::encodeChunkMap(*map));
    return 0;
}
