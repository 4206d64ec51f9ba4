// e2e-cpu-workload: a process that uses no GPU (scenario 5): S steps of a computation in host
// memory, sleeping between steps; prints "checksum <hex>" last, and writes it to --result FILE.

#include <fcntl.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    unsigned steps = 20, stepMs = 100;
    std::string result;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = static_cast<unsigned>(atoi(argv[i + 1]));
        else if (!strcmp(argv[i], "--step-ms"))
            stepMs = static_cast<unsigned>(atoi(argv[i + 1]));
        else if (!strcmp(argv[i], "--result"))
            result = argv[i + 1];
        else if (!strcmp(argv[i], "--hold")) {
            // Keep a device open for the whole run (scenario other_plugin).
            if (open(argv[i + 1], O_RDONLY) < 0) {
                perror(argv[i + 1]);
                return 1;
            }
        }
        else {
            fprintf(stderr, "usage: e2e-cpu-workload [--steps S] [--step-ms MS] [--result FILE] "
                            "[--hold DEVICE]\n");
            return 1;
        }
    }
    std::vector<uint64_t> state(1 << 16);
    for (size_t i = 0; i < state.size(); ++i)
        state[i] = i * 0x9e3779b97f4a7c15ull;
    for (unsigned s = 1; s <= steps; ++s) {
        for (size_t i = 0; i < state.size(); ++i)
            state[i] = (state[i] ^ state[(i + 1) % state.size()]) * 0x5851f42d4c957f2dull + s;
        printf("cpu: step %u/%u\n", s, steps);
        fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t v : state)
        h = (h ^ v) * 0x100000001b3ull;
    printf("checksum %016llx\n", static_cast<unsigned long long>(h));
    if (!result.empty()) {
        FILE* f = fopen(result.c_str(), "w");
        if (!f)
            return 1;
        fprintf(f, "checksum %016llx\n", static_cast<unsigned long long>(h));
        fclose(f);
    }
    return 0;
}
