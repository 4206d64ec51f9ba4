// bench.kfd_contents: the content benchmarks on the KFD backend's own path. A KfdDevice dumps and
// restores a process of the fake KFD (tests/kfd/fake_kfd: the real CRIU ioctls' semantics, the
// BO contents copied by the fake libdrm's SDMA engine into the lanes) into $TMPDIR or /var/tmp:
// 512 MiB (or $BENCH_MIB) of random bytes (nothing compresses) in BOs of 64 MiB on one GPU.
//   - compression: a full dump with lz4 and with zstd:1 against an uncompressed one (CRIU's pages
//     files), all three written through the page cache (`direct-write` off: the same I/O path, so
//     the ratio is the codec's and the layout's; target: never below 0.95 x), and each codec again
//     past the page cache (`direct-write`'s default), whose gain over the same codec through the
//     page cache is printed apart; each dump with its syncfs, the fastest of 9 (bench_util.h says
//     why), the five kinds taking turns, each first in turn;
//   - increments: a dump with lz4, 10% of the chunks rewritten, a dump against it, 10% more, a
//     third against the second: the second's bytes allocated against the first's (target: at
//     most 0.12);
//   - the restore of that chain of three against the restore of the full uncompressed dump (target:
//     at most 1.1 x; warm page cache, the fastest of 3), every restore's bytes compared with the
//     process's.
// Exits non-zero only when it could not measure or a restore gave wrong bytes.
#include "bench_util.h"
#include "kfd_test_machine.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

using namespace fakekfd;

namespace {

constexpr uint64_t kBo = 64ull << 20;
constexpr uint64_t kChunk = 2ull << 20;
constexpr uint32_t kKfdFileId = 10;
constexpr int kRuns = 3;
constexpr int kCodecRuns = 9; // a dump here stalls for seconds now and then (bench_util.h)
constexpr int kPid = 500;

uint64_t lcg(uint64_t& state) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
}

/// Rewrites a tenth of the process's chunks (chosen at random, whole chunks).
void rewriteTenth(FakeProcess& p, uint64_t& state) {
    uint64_t perBo = kBo / kChunk, chunks = p.bos.size() * perBo;
    std::set<uint64_t> picked;
    while (picked.size() < chunks / 10)
        picked.insert(lcg(state) % chunks);
    for (uint64_t c : picked) {
        auto& data = p.bos[c / perBo]->data;
        for (uint64_t i = (c % perBo) * kChunk; i < (c % perBo + 1) * kChunk; ++i)
            data[i] = static_cast<std::byte>((lcg(state) & 0xfe) | 1);
    }
}

bool failed(const base::Error& e) {
    fprintf(stderr, "bench.kfd_contents: %s\n", e.describe().c_str());
    return false;
}

/// Dumps the process into `dir` with `codec` (against `parent` when set), as criu 4.0+ does;
/// `*seconds`: the dump and the syncfs of its directory.
bool dumpInto(TestMachine& m, const std::string& dir, const char* codec, const std::string& parent,
              double* seconds, double* syncSeconds = nullptr, bool directWrite = true) {
    std::filesystem::create_directories(dir);
    auto store = formats::openDirectoryStore(dir);
    if (!store.ok())
        return failed(store.error());
    m.settings.contentCompression = codec;
    m.settings.parentImages = parent;
    m.settings.directWrite = directWrite;
    int dirFd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    syncfs(dirFd); // the previous dump's writeback is not this one's cost
    bool ok = true;
    *seconds = benchutil::secondsOf([&] {
        m.kernel->seize(kPid);
        auto dev = m.device(store->get());
        base::Result<void> r = base::success();
        if (auto paused = dev->pauseProcess(kPid); !paused.ok())
            r = std::move(paused.error());
        else
            r = dev->checkpointProcess(kPid);
        if (r.ok())
            r = dev->dumpFile(m.fileRef(kPid, 3, kKfdFileId));
        auto finished = dev->finishDump(r.ok());
        ok = r.ok() ? (finished.ok() || failed(finished.error())) : failed(r.error());
        if (syncSeconds)
            *syncSeconds = benchutil::secondsOf([&] { syncfs(dirFd); });
    });
    close(dirFd);
    return ok;
}

/// Restores `dir` on a fresh machine and compares every BO with `p`; seconds, or -1.
double restoreFrom(const std::string& dir, const FakeProcess& p) {
    TestMachine dst(machineSpec(1, 0x3000, 150));
    dst.kernel->setCurrentPid(777);
    auto store = formats::openDirectoryStore(dir);
    if (!store.ok())
        return failed(store.error()) ? 0 : -1;
    auto dev = dst.device(store->get());
    bool ok = true;
    double s = benchutil::secondsOf([&] {
        auto fd = dev->restoreFile(kKfdFileId);
        ok = fd.ok() || failed(fd.error());
    });
    if (ok && contentsOf(*dst.kernel->process(777)) != contentsOf(p)) {
        fprintf(stderr, "bench.kfd_contents: the restore of %s gave other bytes\n", dir.c_str());
        ok = false;
    }
    return ok ? s : -1;
}

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

const char* verdict(bool met) {
    return met ? "met" : "NOT met";
}

} // namespace

int main() {
    uint64_t total = 512ull << 20;
    if (const char* m = getenv("BENCH_MIB"))
        total = std::max<uint64_t>((strtoull(m, nullptr, 10) << 20) / kBo, 1) * kBo;
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    for (uint64_t off = 0; off < total; off += kBo)
        spec.bos.push_back({0, kBo, kVram});
    FakeProcess& p = src.kernel->addProcess(kPid, spec);
    std::string base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    std::string root = base + "/criu-amdgpu-kfdbench.XXXXXX";
    if (!mkdtemp(root.data())) {
        fprintf(stderr, "bench.kfd_contents: cannot make a directory in %s\n", base.c_str());
        return 1;
    }
    bool ok = true;
    // Compression against none, taking turns: kinds 0-2 through the page cache, 3-4 the codecs
    // past it (direct-write).
    constexpr int kKinds = 5;
    const char* codecs[kKinds] = {"none", "lz4", "zstd:1", "lz4", "zstd:1"};
    std::vector<double> times[kKinds], syncs[kKinds];
    for (int run = 0; run < kCodecRuns && ok; ++run)
        for (int k = 0; k < kKinds && ok; ++k) {
            int c = (k + run) % kKinds; // each kind in each place in turn
            std::string dir = root + "/" + std::to_string(c) + "-" + std::to_string(run);
            double s = 0, sync = 0;
            ok = dumpInto(src, dir, codecs[c], "", &s, &sync, c >= 3);
            times[c].push_back(s);
            syncs[c].push_back(sync);
            if (run + 1 < kCodecRuns || c != 3) // the last lz4 dump (direct-write) starts the chain
                std::filesystem::remove_all(dir);
        }
    // The chain: lz4, then two increments.
    uint64_t state = 0x9e3779b97f4a7c15ull;
    std::string chain[3] = {root + "/3-" + std::to_string(kCodecRuns - 1), root + "/c2",
                            root + "/c3"};
    double chainSeconds[3] = {0, 0, 0};
    for (int l = 1; l < 3 && ok; ++l) {
        rewriteTenth(p, state);
        ok = dumpInto(src, chain[l], "none", "../" + chain[l - 1].substr(root.size() + 1),
                      &chainSeconds[l]);
    }
    std::vector<double> full, three;
    for (int run = 0; run < kRuns && ok; ++run) {
        three.push_back(restoreFrom(chain[2], p));
        ok = three.back() >= 0;
    }
    uint64_t firstBytes = ok ? benchutil::allocatedIn(chain[0]) : 0,
             secondBytes = ok ? benchutil::allocatedIn(chain[1]) : 0;
    // A full uncompressed dump of the newest bytes, the restore to compare the chain's with.
    double fullDump = 0;
    ok = ok && dumpInto(src, root + "/full", "none", "", &fullDump);
    for (int run = 0; run < kRuns && ok; ++run) {
        full.push_back(restoreFrom(root + "/full", p));
        ok = full.back() >= 0;
    }
    std::filesystem::remove_all(root);
    if (!ok)
        return 1;
    double none = benchutil::fastest(times[0]);
    printf(
        "bench.kfd_contents: the kfd backend on the fake KFD (SDMA by the fake libdrm), one GPU, "
        "%.0f MiB of random bytes in %.0f MiB BOs, %s (%s)\n",
        mib(total), mib(kBo), base.c_str(), benchutil::conditions().c_str());
    printf("  full dump, uncompressed (CRIU's pages files, through the page cache): %.3f s (%.0f "
           "MiB/s), with syncfs (%.3f s of it); each run: ",
           none, benchutil::mibPerSecond(total, none), benchutil::median(syncs[0]));
    for (double t : times[0])
        printf("%.3f ", t);
    printf("s\n");
    for (int c = 1; c < kKinds; ++c) {
        double t = benchutil::fastest(times[c]);
        if (c < 3)
            printf("  full dump, %s, through the page cache: %.3f s (syncfs %.3f s): %.2f x "
                   "uncompressed's speed (target: at least 0.95, the fastest of %d): %s; each "
                   "run: ",
                   codecs[c], t, benchutil::median(syncs[c]), none / t, kCodecRuns,
                   verdict(none / t >= 0.95));
        else
            printf("  full dump, %s, past the page cache (direct-write): %.3f s (syncfs %.3f s): "
                   "%.2f x the same codec's speed through the page cache (the write path's gain, "
                   "no target); each run: ",
                   codecs[c], t, benchutil::median(syncs[c]), benchutil::fastest(times[c - 2]) / t);
        for (double r : times[c])
            printf("%.3f ", r);
        printf("s\n");
    }
    double ratioBytes = static_cast<double>(secondBytes) / static_cast<double>(firstBytes);
    printf("  increments: first (lz4) %.1f MiB allocated, second %.1f MiB in %.3f s, third in %.3f "
           "s\n",
           mib(firstBytes), mib(secondBytes), chainSeconds[1], chainSeconds[2]);
    printf("  second dump's bytes: %.3f of the first's (target: at most 0.12): %s\n", ratioBytes,
           verdict(ratioBytes <= 0.12));
    double ratioRestore = benchutil::fastest(three) / benchutil::fastest(full);
    printf("  restore of the chain of three: %.3f s, of a full uncompressed dump: %.3f s: %.2f x "
           "(target: at most 1.1, warm page cache, the fastest of %d, bytes compared): %s\n",
           benchutil::fastest(three), benchutil::fastest(full), ratioRestore, kRuns,
           verdict(ratioRestore <= 1.1));

    const char* bench = "bench.kfd_contents";
    for (int c = 1; c < 3; ++c) {
        double t = benchutil::fastest(times[c]);
        benchutil::figure(
            bench,
            benchutil::text("full dump, %s, random bytes, through the page cache, "
                            "fastest of %d",
                            codecs[c], kCodecRuns),
            benchutil::text("%.3f s: %.2f x the uncompressed dump's speed", t, none / t),
            benchutil::text("uncompressed, CRIU's pages files, through the page "
                            "cache: %.3f s",
                            none),
            "at least 0.95 x", benchutil::met(none / t >= 0.95));
    }
    for (int c = 3; c < kKinds; ++c) {
        double t = benchutil::fastest(times[c]), buffered = benchutil::fastest(times[c - 2]);
        benchutil::figure(
            bench,
            benchutil::text("full dump, %s, random bytes, past the page cache (direct-write), "
                            "fastest of %d",
                            codecs[c], kCodecRuns),
            benchutil::text("%.3f s: %.2f x the same codec's speed through the page cache", t,
                            buffered / t),
            benchutil::text("%s through the page cache: %.3f s", codecs[c], buffered), "none",
            "none");
    }
    benchutil::figure(
        bench, "second dump's bytes, 10% of the 2 MiB chunks rewritten",
        benchutil::text("%.1f MiB allocated: %.3f of the first's", mib(secondBytes), ratioBytes),
        benchutil::text("the first dump (lz4), %.1f MiB", mib(firstBytes)), "at most 0.12",
        benchutil::met(ratioBytes <= 0.12));
    benchutil::figure(bench,
                      benchutil::text("restore of a chain of three (lz4, delta, delta), bytes "
                                      "compared, fastest of %d",
                                      kRuns),
                      benchutil::text("%.3f s: %.2f x", benchutil::fastest(three), ratioRestore),
                      benchutil::text("a full uncompressed dump, %.3f s", benchutil::fastest(full)),
                      "at most 1.1 x", benchutil::met(ratioRestore <= 1.1));
    return 0;
}
