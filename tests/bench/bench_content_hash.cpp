// bench.content_hash: the checksum of BO contents against memcpy of the same bytes, in the same
// run. XXH3-64 (what this version writes) and FNV-1a 64 (what earlier versions wrote). Exits
// non-zero only when it could not measure.
#include "bench_util.h"

#include "content/digest.h"

#include <unistd.h>

#include <cstring>
#include <memory>

int main() {
    constexpr uint64_t kBytes = 128ull << 20;
    constexpr uint64_t kFnvBytes = 16ull << 20; // FNV is slow: a part is enough
    constexpr uint64_t kUpdate = 4ull << 20;    // the lane's chunk order of magnitude
    constexpr int kRuns = 7;
    std::unique_ptr<std::byte[]> src(new (std::nothrow) std::byte[kBytes]);
    std::unique_ptr<std::byte[]> dst(new (std::nothrow) std::byte[kBytes]);
    if (!src || !dst) {
        fprintf(stderr, "bench.content_hash: cannot allocate 2 x %llu MiB\n",
                static_cast<unsigned long long>(kBytes >> 20));
        return 1;
    }
    for (uint64_t i = 0; i < kBytes; ++i)
        src[i] = static_cast<std::byte>(i * 131 + (i >> 11));
    memset(dst.get(), 1, kBytes);
    volatile uint64_t sink = 0;
    double copy = benchutil::medianSeconds(kRuns, [&] { memcpy(dst.get(), src.get(), kBytes); });
    double xxh3 = benchutil::medianSeconds(kRuns, [&] {
        content::ContentDigest d(content::DigestKind::Xxh3_64);
        for (uint64_t off = 0; off < kBytes; off += kUpdate)
            d.update(std::span(src.get() + off, kUpdate));
        sink = d.value();
    });
    double fnv = benchutil::medianSeconds(3, [&] {
        content::ContentDigest d(content::DigestKind::Fnv1a64);
        d.update(std::span(src.get(), kFnvBytes));
        sink = d.value();
    });
    (void)sink;
    if (copy <= 0 || xxh3 <= 0 || fnv <= 0) {
        fprintf(stderr, "bench.content_hash: a run took no measurable time\n");
        return 1;
    }
    double copyRate = benchutil::mibPerSecond(kBytes, copy);
    double xxh3Rate = benchutil::mibPerSecond(kBytes, xxh3);
    double fnvRate = benchutil::mibPerSecond(kFnvBytes, fnv);
    printf("bench.content_hash: checksums against memcpy of the same %llu MiB, medians of %d runs "
           "(%s)\n",
           static_cast<unsigned long long>(kBytes >> 20), kRuns, benchutil::conditions().c_str());
    printf("  memcpy       %8.0f MiB/s  (the limit)\n", copyRate);
    printf("  XXH3-64      %8.0f MiB/s  (%.2f x memcpy)\n", xxh3Rate, xxh3Rate / copyRate);
    printf("  FNV-1a 64    %8.0f MiB/s  (%.2f x memcpy; images of earlier versions)\n", fnvRate,
           fnvRate / copyRate);
    printf("  XXH3-64 / FNV-1a 64: %.1f x (target: at least 8 x)\n", xxh3Rate / fnvRate);
    benchutil::figure(
        "bench.content_hash", "XXH3-64 against FNV-1a 64 (earlier images)",
        benchutil::text("XXH3-64 %.0f MiB/s, FNV-1a 64 %.0f MiB/s: %.1f x", xxh3Rate, fnvRate,
                        xxh3Rate / fnvRate),
        benchutil::text("memcpy %.0f MiB/s (XXH3-64 %.2f x)", copyRate, xxh3Rate / copyRate),
        "at least 8 x FNV-1a", benchutil::met(xxh3Rate / fnvRate >= 8));
    return 0;
}
