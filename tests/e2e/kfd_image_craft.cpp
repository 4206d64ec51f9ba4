// Crafts a KFD image (amdgpu-kfd-ID.img) as a hostile registry could (scenario
// kfd_driver_hostile):
//   e2e-kfd-image-craft IMAGE
// lists its BOs, one a line: "bo INDEX GPU_ID SIZE OFFSET ALLOC_FLAGS ADDR" (numbers in hex but
// INDEX and SIZE);
//   e2e-kfd-image-craft IMAGE INDEX FIELD VALUE
// sets FIELD (size, offset or gpu_id) of BO INDEX to VALUE (strtoull's base 0), keeping everything
// else, and writes the image back in its layout (an 8-byte size, then the packed message).
#include "formats/proto_image.h"
#include "temp_dir.h"

#include "criu-amdgpu.pb-c.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

int usage() {
    fprintf(stderr, "usage: e2e-kfd-image-craft IMAGE [INDEX size|offset|gpu_id VALUE]\n");
    return 2;
}

bool parseNumber(const char* text, uint64_t* out) {
    char* end = nullptr;
    errno = 0;
    *out = strtoull(text, &end, 0);
    return errno == 0 && end != text && *end == '\0';
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 5)
        return usage();
    std::string path = std::filesystem::absolute(argv[1]).string();
    std::string bytes = testsupport::readFile(path);
    uint64_t size = 0;
    if (bytes.size() < sizeof size) {
        fprintf(stderr, "%s: shorter than its size header\n", path.c_str());
        return 1;
    }
    memcpy(&size, bytes.data(), sizeof size);
    auto message = formats::unpackProto<CriuKfd>(std::string_view(bytes).substr(sizeof size, size),
                                                 &criu_kfd__descriptor, path);
    if (!message.ok()) {
        fprintf(stderr, "%s\n", message.error().describe().c_str());
        return 1;
    }
    CriuKfd& kfd = **message;
    if (argc == 2) {
        for (size_t i = 0; i < kfd.n_bo_entries; ++i) {
            const KfdBoEntry& bo = *kfd.bo_entries[i];
            printf("bo %zu 0x%x %" PRIu64 " 0x%" PRIx64 " 0x%x 0x%" PRIx64 "\n", i, bo.gpu_id,
                   bo.size, bo.offset, bo.alloc_flags, bo.addr);
        }
        return 0;
    }
    uint64_t index = 0, value = 0;
    if (!parseNumber(argv[2], &index) || !parseNumber(argv[4], &value))
        return usage();
    if (index >= kfd.n_bo_entries) {
        fprintf(stderr, "%s holds %zu BOs, no BO %" PRIu64 "\n", path.c_str(), kfd.n_bo_entries,
                index);
        return 1;
    }
    KfdBoEntry& bo = *kfd.bo_entries[index];
    std::string field = argv[3];
    if (field == "size")
        bo.size = value;
    else if (field == "offset")
        bo.offset = value;
    else if (field == "gpu_id" && value <= UINT32_MAX)
        bo.gpu_id = static_cast<uint32_t>(value);
    else
        return usage();
    std::string packed = formats::packProto(&kfd.base);
    size = packed.size();
    testsupport::writeFile(path,
                           std::string(reinterpret_cast<const char*>(&size), sizeof size) + packed);
    return 0;
}
