// Reading long device maps and backend lists (label bench): every entry is checked against the
// ones before it, and the whole read must stay O(n log n). Prints the time per list length and
// the fitted complexity.
#include "config/sources.h"
#include "config/value_parsers.h"

#include <benchmark/benchmark.h>

#include <cstdio>

namespace {

std::string deviceMapText(int64_t n) {
    std::string text;
    char entry[48];
    for (int64_t i = 1; i <= n; ++i) {
        snprintf(entry, sizeof(entry), "%s0x%llx=0x%llx", i > 1 ? "," : "",
                 static_cast<unsigned long long>(i), static_cast<unsigned long long>(i + 0x100000));
        text += entry;
    }
    return text;
}

void BM_DeviceMapText(benchmark::State& state) {
    std::string text = deviceMapText(state.range(0));
    for (auto _ : state) {
        auto map = config::parseDeviceMap(text);
        if (!map.ok() || map->size() != static_cast<size_t>(state.range(0)))
            state.SkipWithError("the device map did not parse");
        benchmark::DoNotOptimize(map);
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_DeviceMapText)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Complexity();

void BM_BackendList(benchmark::State& state) {
    std::string text;
    for (int64_t i = 0; i < state.range(0); ++i)
        text += (i ? ",b" : "b") + std::to_string(i);
    for (auto _ : state) {
        auto names = config::parseBackendList(text);
        if (!names.ok())
            state.SkipWithError("the backend list did not parse");
        benchmark::DoNotOptimize(names);
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_BackendList)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)->Complexity();

void BM_YamlDeviceMap(benchmark::State& state) {
    std::string text = "device_map:\n";
    for (int64_t i = 1; i <= state.range(0); ++i)
        text += "  - 0x" + std::to_string(i) + "=renderD" + std::to_string(i) + "\n";
    for (auto _ : state) {
        auto a = config::parseYamlText(text, "bench.yaml");
        if (!a.ok())
            state.SkipWithError("the YAML did not parse");
        benchmark::DoNotOptimize(a);
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_YamlDeviceMap)->RangeMultiplier(4)->Range(1 << 8, 1 << 14)->Complexity();

} // namespace

BENCHMARK_MAIN();
