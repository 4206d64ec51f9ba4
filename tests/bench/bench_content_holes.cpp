// bench.content_holes: BO contents of which about 70% are zeros (runs of random lengths, as a
// pool allocator leaves them), dumped by one GPU's content lane (fake SDMA, the checksum) into
// /dev/shm (tmpfs) and into $TMPDIR or /var/tmp (ext4 here): the bytes the images allocate
// against the non-zero bytes plus 1% of the contents (the target), and the dump and restore
// speed with holes and without, in the same run on the same bytes, taking turns; and the cost of
// the zero check on bytes without zero blocks (medians of 7). Exits non-zero only when it could not
// measure (or a restore did not give the checksum back).
#include "bench_lane_rig.h"
#include "bench_util.h"

#include "content/digest.h"
#include "content/zero_runs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace {

constexpr uint64_t kBo = 64ull << 20;
constexpr uint64_t kStaging = 64ull << 20; // max-buffer-size's default
constexpr int kRuns = 3;
constexpr int kDenseRuns = 7; // the check's cost is small beside the noise of a shared machine

/// Fills `vram` with runs of data (bytes that are never 0) and of zeros, of random lengths (data
/// up to 600 KiB, zeros up to 1400 KiB, neither aligned); returns the bytes that are not zero.
uint64_t fillSeventyPercentZeros(std::byte* vram, uint64_t size) {
    uint64_t state = 0x9e3779b97f4a7c15ull, nonZero = 0;
    auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
    };
    for (uint64_t at = 0; at < size;) {
        uint64_t data = std::min(size - at, 1 + next() % (600 << 10));
        for (uint64_t i = at; i < at + data; ++i)
            vram[i] = static_cast<std::byte>((i * 131 + (i >> 13)) | 1);
        nonZero += data;
        at += data;
        uint64_t zeros = std::min(size - at, 1 + next() % (1400 << 10));
        memset(vram + at, 0, zeros);
        at += zeros;
    }
    return nonZero;
}

/// Bytes allocated by the files of `dir`, and their apparent size.
std::pair<uint64_t, uint64_t> usage(const std::string& dir) {
    uint64_t blocks = 0, apparent = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        struct stat st;
        if (stat(e.path().c_str(), &st) == 0) {
            blocks += static_cast<uint64_t>(st.st_blocks) * 512;
            apparent += static_cast<uint64_t>(st.st_size);
        }
    }
    return {blocks, apparent};
}

struct Figures {
    uint64_t allocated[2] = {}; // without holes, with
    uint64_t apparent = 0;
    double dump[2] = {}, restore[2] = {};
};

/// Dumps and restores the rig's BOs in `base`, without holes and with; false when a lane failed.
bool measure(benchutil::LaneRig& rig, const std::string& base, Figures& f, int runs = kRuns) {
    std::string tmpl = base + "/criu-amdgpu-holes.XXXXXX";
    if (!mkdtemp(tmpl.data())) {
        fprintf(stderr, "bench.content_holes: cannot make a directory in %s\n", base.c_str());
        return false;
    }
    auto store = formats::openDirectoryStore(tmpl);
    if (!store.ok()) {
        fprintf(stderr, "bench.content_holes: %s\n", store.error().describe().c_str());
        return false;
    }
    rig.store = std::move(store).value();
    int dirFd = open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool failed = false;
    std::vector<double> dumps[2], restores[2];
    // The two ways take turns, each dump into an empty directory whose file system has written
    // back what the previous run left dirty, so neither pays for the other's writeback.
    for (int run = 0; run < runs; ++run)
        for (int holes = 0; holes < 2; ++holes) {
            for (const auto& e : std::filesystem::directory_iterator(tmpl))
                std::filesystem::remove(e.path());
            syncfs(dirFd);
            std::vector<datapath::DumpImage> dumped = rig.dumpImages();
            dumps[holes].push_back(benchutil::secondsOf([&] {
                failed = failed || !datapath::runDumpLane(dumped, rig.lane(true, holes)).ok();
            }));
            auto [allocated, apparent] = usage(tmpl);
            f.allocated[holes] = allocated;
            f.apparent = apparent;
            restores[holes].push_back(benchutil::secondsOf([&] {
                auto images = rig.restoreImages(dumped, true);
                auto r = datapath::runRestoreLane(images, rig.lane(true));
                if (!r.ok())
                    fprintf(stderr, "bench.content_holes: %s\n", r.error().describe().c_str());
                failed = failed || !r.ok();
            }));
        }
    close(dirFd);
    for (int holes = 0; holes < 2; ++holes) {
        f.dump[holes] = benchutil::median(dumps[holes]);
        f.restore[holes] = benchutil::median(restores[holes]);
    }
    rig.store.reset();
    std::filesystem::remove_all(tmpl);
    return !failed;
}

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

} // namespace

int main() {
    uint64_t total = benchutil::laneBenchBytes(kBo);
    benchutil::LaneRig rig(total, kBo, kStaging);
    if (!rig.allocated("bench.content_holes"))
        return 1;
    uint64_t nonZero = fillSeventyPercentZeros(rig.vram.get(), total);
    std::string disk = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    const std::string bases[2] = {"/dev/shm", disk};
    Figures figures[2];
    for (int b = 0; b < 2; ++b)
        if (!measure(rig, bases[b], figures[b]))
            return 1;
    // The cost of the zero check where it finds nothing: the same lane over bytes none of
    // whose blocks is zero.
    for (uint64_t i = 0; i < total; ++i)
        rig.vram[i] = static_cast<std::byte>((i * 131 + (i >> 13)) | 1);
    Figures dense;
    if (!measure(rig, "/dev/shm", dense, kDenseRuns))
        return 1;
    // And the check alone, in memory, beside the checksum over the same bytes.
    std::vector<content::ByteRun> runs;
    std::span<const std::byte> all(rig.vram.get(), total);
    double check = benchutil::medianSeconds(kDenseRuns, [&] {
        for (size_t at = 0; at < total; at += 256 << 10) {
            content::ZeroRunFinder finder(formats::kImageHeaderBytes + at, runs);
            finder.feed(all.subspan(at, 256 << 10));
            finder.finish();
        }
    });
    uint64_t sink = 0;
    double hash = benchutil::medianSeconds(kDenseRuns, [&] { sink += content::xxh3Of(all); });

    printf("bench.content_holes: one GPU lane, %.0f MiB in %.0f MiB BOs, %.1f%% zeros in runs of "
           "random lengths, fake SDMA (memcpy), XXH3-64, medians of %d runs (%s)\n",
           mib(total), mib(kBo),
           100.0 * static_cast<double>(total - nonZero) / static_cast<double>(total), kRuns,
           benchutil::conditions().c_str());
    for (int b = 0; b < 2; ++b) {
        const Figures& f = figures[b];
        uint64_t target = nonZero + total / 100;
        printf("  %s: images %.1f MiB apparent; allocated with holes %.1f MiB, without %.1f MiB; "
               "target: at most the non-zero bytes %.1f MiB + 1%% of the contents = %.1f MiB: %s "
               "(%.3f of the non-zero bytes)\n",
               bases[b].c_str(), mib(f.apparent), mib(f.allocated[1]), mib(f.allocated[0]),
               mib(nonZero), mib(target), f.allocated[1] <= target ? "met" : "NOT met",
               static_cast<double>(f.allocated[1]) / static_cast<double>(nonZero));
        printf("    dump %7.0f MiB/s with holes, %7.0f without (%.2f x); restore %7.0f MiB/s "
               "from the sparse images, %7.0f from the full ones (%.2f x)\n",
               benchutil::mibPerSecond(total, f.dump[1]), benchutil::mibPerSecond(total, f.dump[0]),
               f.dump[0] / f.dump[1], benchutil::mibPerSecond(total, f.restore[1]),
               benchutil::mibPerSecond(total, f.restore[0]), f.restore[0] / f.restore[1]);
        benchutil::figure(
            "bench.content_holes",
            benchutil::text("bytes allocated, %.1f%% zeros, %s",
                            100.0 * static_cast<double>(total - nonZero) /
                                static_cast<double>(total),
                            bases[b].c_str()),
            benchutil::text("with holes %.1f MiB (%.3f of the non-zero bytes); without %.1f MiB",
                            mib(f.allocated[1]),
                            static_cast<double>(f.allocated[1]) / static_cast<double>(nonZero),
                            mib(f.allocated[0])),
            benchutil::text("the non-zero bytes %.1f MiB + 1%% of the contents = %.1f MiB",
                            mib(nonZero), mib(target)),
            "at most the limit", benchutil::met(f.allocated[1] <= target));
        benchutil::figure("bench.content_holes",
                          benchutil::text("speed with holes, %s", bases[b].c_str()),
                          benchutil::text("dump %.0f MiB/s, restore %.0f MiB/s",
                                          benchutil::mibPerSecond(total, f.dump[1]),
                                          benchutil::mibPerSecond(total, f.restore[1])),
                          benchutil::text("without holes: dump %.0f MiB/s, restore %.0f MiB/s",
                                          benchutil::mibPerSecond(total, f.dump[0]),
                                          benchutil::mibPerSecond(total, f.restore[0])),
                          "none", "none");
    }
    printf("  /dev/shm, no zero block: dump %7.0f MiB/s with the zero check, %7.0f without: %.2f "
           "(target: at least 0.95)\n",
           benchutil::mibPerSecond(total, dense.dump[1]),
           benchutil::mibPerSecond(total, dense.dump[0]), dense.dump[0] / dense.dump[1]);
    benchutil::figure("bench.content_holes", "dump of bytes without a zero block, /dev/shm",
                      benchutil::text("with the zero check %.0f MiB/s",
                                      benchutil::mibPerSecond(total, dense.dump[1])),
                      benchutil::text("without it %.0f MiB/s (%.2f)",
                                      benchutil::mibPerSecond(total, dense.dump[0]),
                                      dense.dump[0] / dense.dump[1]),
                      "at least 0.95 of the limit",
                      benchutil::met(dense.dump[0] / dense.dump[1] >= 0.95));
    printf("  the zero check alone over those bytes, in memory: %.0f MiB/s (XXH3-64 over them: "
           "%.0f MiB/s)%s\n",
           benchutil::mibPerSecond(total, check), benchutil::mibPerSecond(total, hash),
           runs.empty() && sink ? "" : " (found zeros?)");
    return 0;
}
