// kfd-driver ROOT [--gpus N] [--gpu-id-base ID] [--hide-render MINOR]... [--no-kfd]: runs the
// user-space KFD driver of a machine under the directory ROOT (driver_server.h) until SIGTERM or
// SIGINT; prints "ready loopN" once it serves (N: its loop device). --hide-render: the machine's
// /dev lacks that render node and its devices cgroup refuses it, as for a container given the other
// GPUs (sysfs lists every GPU). --no-kfd: a machine of render nodes only, whose /dev has no kfd.
#include "driver_server.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile int stopRequested = 0;

void onSignal(int) {
    stopRequested = 1;
}

bool parseNumber(const char* text, unsigned long long max, unsigned long long* out) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text || *end || v > max)
        return false;
    *out = v;
    return true;
}

int usage(const char* why) {
    fprintf(stderr,
            "kfd-driver: %s\nusage: kfd-driver ROOT [--gpus 1..16] [--gpu-id-base ID] "
            "[--hide-render MINOR]... [--no-kfd]\n",
            why);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        return usage("no driver root given");
    kfddriver::MachineSpec spec;
    for (int i = 2; i < argc; i += 2) {
        if (!strcmp(argv[i], "--no-kfd")) {
            spec.noKfd = true;
            --i; // a flag: no value follows
            continue;
        }
        unsigned long long v = 0;
        if (i + 1 >= argc)
            return usage((std::string(argv[i]) + " needs a value").c_str());
        if (!strcmp(argv[i], "--gpus")) {
            if (!parseNumber(argv[i + 1], 16, &v) || v == 0)
                return usage("--gpus takes a number from 1 to 16");
            spec.gpus = static_cast<unsigned>(v);
        } else if (!strcmp(argv[i], "--gpu-id-base")) {
            if (!parseNumber(argv[i + 1], 0xffff0000ull, &v) || v == 0)
                return usage("--gpu-id-base takes a nonzero gpu_id");
            spec.gpuIdBase = static_cast<uint32_t>(v);
        } else if (!strcmp(argv[i], "--hide-render")) {
            if (!parseNumber(argv[i + 1], 255, &v) || v < 128)
                return usage("--hide-render takes a render minor from 128 to 255");
            spec.hiddenRenderMinors.push_back(static_cast<int>(v));
        } else {
            return usage((std::string("unknown option ") + argv[i]).c_str());
        }
    }
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::string error;
    kfddriver::DriverServer server(argv[1], spec, &error);
    if (!error.empty()) {
        fprintf(stderr, "kfd-driver: %s: %s\n", argv[1], error.c_str());
        return 1;
    }
    printf("ready loop%d\n", server.loopIndex());
    fflush(stdout);
    server.serve(&stopRequested);
    return 0;
}
