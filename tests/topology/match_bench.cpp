// Matching time for identity and shuffled machines of 1..64 GPUs, adversarial cases and the real
// CPX captures (when present).
#include "hal/topology_match.h"
#include "hal/topology_sysfs.h"
#include "topology_fixtures.h"

#include <benchmark/benchmark.h>

#include <random>
#include <sys/stat.h>

namespace {

using testsupport::gpuAt;
using testsupport::setVram;
using testsupport::synth;

constexpr uint64_t kGiB = 1ull << 30;

unsigned hivesFor(unsigned gpus) { return gpus >= 8 ? gpus / 8 : (gpus > 1 ? 1 : 0); }

void runMatch(benchmark::State& state, const hal::Topology& s, const hal::Topology& d,
              bool expected) {
    uint64_t nodes = 0;
    for (auto _ : state) {
        hal::MatchReport r = hal::matchTopologies(s, d, {});
        if (r.matched != expected) {
            state.SkipWithError("unexpected match result");
            return;
        }
        nodes = r.searchNodes;
        benchmark::DoNotOptimize(r);
    }
    state.counters["search_nodes"] = static_cast<double>(nodes);
}

// Same machine: every GPU maps onto itself.
void BM_Identity(benchmark::State& state) {
    unsigned n = static_cast<unsigned>(state.range(0));
    hal::Topology t = synth(n, hivesFor(n), 2);
    runMatch(state, t, t, true);
}
BENCHMARK(BM_Identity)->Arg(1)->Arg(8)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// Same shape, other gpu_ids, hives and CPU attachment permuted at random.
void BM_Shuffled(benchmark::State& state) {
    unsigned n = static_cast<unsigned>(state.range(0));
    unsigned hives = hivesFor(n);
    hal::Topology s = synth(n, hives, 2);
    hal::Topology d = synth(n, 0, 2, 0x9000);
    std::mt19937 rng(42);
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i)
        order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<size_t>> groups(std::max(1u, hives));
    for (size_t i = 0; i < n; ++i) {
        groups[hives ? i * hives / n : 0].push_back(order[i]);
        // The source puts GPU i on CPU i % 2, within hive i*hives/n; mirror that on the shuffle.
        testsupport::attachToCpu(d, gpuAt(d, order[i]).index, static_cast<uint32_t>(i % 2));
    }
    if (hives)
        testsupport::setHives(d, groups);
    runMatch(state, s, d, true);
}
BENCHMARK(BM_Shuffled)->Arg(1)->Arg(8)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// VRAM sizes that fit only in reverse order.
void BM_VramOneOrder(benchmark::State& state) {
    unsigned n = static_cast<unsigned>(state.range(0));
    hal::Topology s = synth(n), d = synth(n, 0, 1, 0x9000);
    for (unsigned i = 0; i < n; ++i) {
        setVram(gpuAt(s, i), (i + 1) * kGiB);
        setVram(gpuAt(d, i), (n - i) * kGiB);
    }
    runMatch(state, s, d, true);
}
BENCHMARK(BM_VramOneOrder)->Arg(8)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// Hives that must rotate: source hive h needs (h+1) GiB steps, the destination's are shifted.
void BM_HivesMustSwap(benchmark::State& state) {
    unsigned n = static_cast<unsigned>(state.range(0)), hives = n / 4;
    hal::Topology s = synth(n, hives), d = synth(n, hives, 1, 0x9000);
    for (unsigned i = 0; i < n; ++i) {
        unsigned h = i * hives / n;
        setVram(gpuAt(s, i), (h + 1) * kGiB);
        setVram(gpuAt(d, i), (hives - h) * kGiB);
    }
    runMatch(state, s, d, true);
}
BENCHMARK(BM_HivesMustSwap)->Arg(8)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// No mapping: identical hives, but one destination hive misses one XGMI link.
void BM_BrokenHiveNoMapping(benchmark::State& state) {
    unsigned n = static_cast<unsigned>(state.range(0)), hives = n / 4;
    hal::Topology s = synth(n, hives), d = synth(n, hives, 1, 0x9000);
    testsupport::removeLink(d, gpuAt(d, n - 4).index, gpuAt(d, n - 3).index);
    runMatch(state, s, d, false);
}
BENCHMARK(BM_BrokenHiveNoMapping)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// The real CPX captures matched against themselves.
void BM_Capture(benchmark::State& state, const char* name) {
    std::string root = std::string(CRIU_AMDGPU_SHARED_FIXTURES) + "/" + name;
    struct stat st;
    if (::stat(root.c_str(), &st) != 0) {
        state.SkipWithError("capture not present");
        return;
    }
    auto t = hal::readKfdTopology(root);
    if (!t.ok()) {
        state.SkipWithError("capture unreadable");
        return;
    }
    runMatch(state, *t, *t, true);
}
BENCHMARK_CAPTURE(BM_Capture, mi300x_63cpx, "mi300x-8card-cpx")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Capture, mi308x_32cpx, "mi308x-8card-cpx")->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
