// libFuzzer entry points for a harness (fuzz_target.h), plus `--write-seeds=DIR`, which writes
// the harness's seeds as DIR/seed-N and exits.
#include "fuzz_target.h"

#include "base/log.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace {

void silence(base::LogLevel, const char*) {}

int writeSeeds(const char* dir) {
    mkdir(dir, 0755);
    std::vector<std::string> seeds = fuzzSeeds();
    for (size_t i = 0; i < seeds.size(); ++i) {
        std::string path = std::string(dir) + "/seed-" + std::to_string(i);
        std::ofstream out(path, std::ios::binary);
        out << seeds[i];
        if (!out) {
            fprintf(stderr, "cannot write %s\n", path.c_str());
            return 1;
        }
    }
    return 0;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    base::setLogSink(silence);
    constexpr const char* kFlag = "--write-seeds=";
    for (int i = 1; i < *argc; ++i)
        if (strncmp((*argv)[i], kFlag, strlen(kFlag)) == 0)
            exit(writeSeeds((*argv)[i] + strlen(kFlag)));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
