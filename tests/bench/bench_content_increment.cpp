// bench.content_increment: incremental dumps in one GPU's content lane (fake SDMA, XXH3-64 and
// the chunks' XXH3-128) into $TMPDIR or /var/tmp (ext4 here). A full dump, then 10% of the
// chunks rewritten and a dump against it, then 10% more and a third against the second: the
// bytes the second allocates against the first's (target: at most 0.12). The time of a dump
// against its parent is paired with a full dump of the same bytes, taking turns (five of each,
// each kind first in turn, their medians; target: at most 0.35), and the restore of the chain of
// three against the restore of a full image (target: at most 1.1 times; both from a warm page
// cache, medians of 3, taking turns). Exits non-zero only when it could not measure, or a restore
// did not give the checksum back.
#include "bench_lane_rig.h"
#include "bench_util.h"

#include "formats/chunk_map.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

namespace {

constexpr uint64_t kBo = 64ull << 20;
constexpr uint64_t kStaging = 64ull << 20; // max-buffer-size's default
constexpr uint64_t kChunk = formats::kDefaultIncrementChunk;
constexpr int kRestoreRuns = 3;
constexpr int kDumpRuns = 5; // of each kind: a full dump and one against its parent, in turns

uint64_t lcg(uint64_t& state) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
}

/// Rewrites a tenth of the chunks of `vram` (chosen at random, whole chunks, bytes never 0).
void rewriteTenth(std::byte* vram, uint64_t size, uint64_t& state) {
    uint64_t chunks = size / kChunk;
    std::set<uint64_t> picked;
    while (picked.size() < chunks / 10)
        picked.insert(lcg(state) % chunks);
    for (uint64_t c : picked)
        for (uint64_t i = c * kChunk; i < (c + 1) * kChunk; ++i)
            vram[i] = static_cast<std::byte>((lcg(state) & 0xfe) | 1);
}

/// One level of the chain: its directory, its store, what each BO recorded.
struct Level {
    std::string dir;
    std::unique_ptr<formats::ImageStore> store;
    std::vector<formats::BoChunks> chunks;
    std::vector<datapath::DumpImage> dumped;
    double seconds = 0;
    uint64_t allocated = 0;
};

bool dumpLevel(benchutil::LaneRig& rig, Level& level, const Level* parent) {
    int fd = open(level.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    syncfs(fd); // the previous level's writeback is not this one's cost
    rig.store = std::move(level.store);
    level.dumped = rig.dumpImages();
    level.chunks.assign(rig.bos.size(), formats::BoChunks{});
    for (size_t i = 0; i < rig.bos.size(); ++i) {
        level.chunks[i].key = {0xbe00, i * kBo, kBo};
        level.chunks[i].chunkSize = kChunk;
        level.chunks[i].file = level.dumped[i].name;
        level.dumped[i].pieces[0].chunks = &level.chunks[i];
        level.dumped[i].pieces[0].parent = parent ? &parent->chunks[i] : nullptr;
    }
    bool ok = true;
    level.seconds = benchutil::secondsOf([&] {
        auto r = datapath::runDumpLane(level.dumped, rig.lane(true));
        if (!r.ok())
            fprintf(stderr, "bench.content_increment: %s\n", r.error().describe().c_str());
        ok = r.ok();
    });
    syncfs(fd);
    close(fd);
    level.store = std::move(rig.store);
    level.allocated = benchutil::allocatedIn(level.dir);
    return ok;
}

/// Restores the newest of `chain` (newest first) with its parents; seconds, or -1 on failure.
double restoreChain(benchutil::LaneRig& rig, std::vector<Level>& chain, size_t newest,
                    size_t depth) {
    std::vector<datapath::RestoreImage> images;
    for (size_t i = 0; i < rig.bos.size(); ++i) {
        datapath::RestoreImage image;
        image.name = chain[newest].dumped[i].name;
        std::string name = image.name;
        image.open = [&chain, newest, name] {
            return formats::openFramedImage(*chain[newest].store, name);
        };
        for (size_t p = 1; p < depth; ++p)
            image.parents.push_back([&chain, newest, p, name] {
                return formats::openFramedImage(*chain[newest - p].store, name);
            });
        image.chainChunk = kChunk;
        for (size_t c = 0; c < chain[newest].chunks[i].chunks.size(); ++c) {
            uint32_t level = 0;
            while (chain[newest - level].chunks[i].chunks[c].place == formats::ChunkPlace::InParent)
                ++level;
            image.holder.push_back(level);
        }
        image.pieces.push_back({nullptr, rig.bos[i].get(), kBo, "BO " + std::to_string(i)});
        image.expected = chain[newest].dumped[i].checksum;
        images.push_back(std::move(image));
    }
    bool ok = true;
    double s = benchutil::secondsOf([&] {
        auto r = datapath::runRestoreLane(images, rig.lane(true));
        if (!r.ok())
            fprintf(stderr, "bench.content_increment: %s\n", r.error().describe().c_str());
        ok = r.ok();
    });
    return ok ? s : -1;
}

/// Dumps the bytes in `rig` into a new directory `dir` (against `parent` when set), removes it
/// again, and adds its time to `times`; false when it could not.
bool timedDump(benchutil::LaneRig& rig, const std::string& dir, const Level* parent,
               std::vector<double>& times) {
    Level scratch;
    scratch.dir = dir;
    std::filesystem::create_directory(dir);
    auto store = formats::openDirectoryStore(dir);
    if (!store.ok()) {
        fprintf(stderr, "bench.content_increment: %s\n", store.error().describe().c_str());
        return false;
    }
    scratch.store = std::move(store).value();
    bool ok = dumpLevel(rig, scratch, parent);
    times.push_back(scratch.seconds);
    std::filesystem::remove_all(dir);
    return ok;
}

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

} // namespace

int main() {
    uint64_t total = benchutil::laneBenchBytes(kBo);
    benchutil::LaneRig rig(total, kBo, kStaging);
    if (!rig.allocated("bench.content_increment"))
        return 1;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < total; ++i)
        rig.vram[i] = static_cast<std::byte>((lcg(state) & 0xfe) | 1);
    std::string base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    std::string root = base + "/criu-amdgpu-incr.XXXXXX";
    if (!mkdtemp(root.data())) {
        fprintf(stderr, "bench.content_increment: cannot make a directory in %s\n", base.c_str());
        return 1;
    }
    std::vector<Level> chain(3);
    bool ok = true;
    for (size_t l = 0; l < chain.size() && ok; ++l) {
        chain[l].dir = root + "/d" + std::to_string(l + 1);
        std::filesystem::create_directory(chain[l].dir);
        auto store = formats::openDirectoryStore(chain[l].dir);
        if (!store.ok()) {
            fprintf(stderr, "bench.content_increment: %s\n", store.error().describe().c_str());
            ok = false;
            break;
        }
        chain[l].store = std::move(store).value();
        if (l > 0)
            rewriteTenth(rig.vram.get(), total, state);
        ok = dumpLevel(rig, chain[l], l ? &chain[l - 1] : nullptr);
    }
    // The dump times, paired: the newest bytes dumped whole and against the second dump (10% of
    // the chunks differ from it), taking turns.
    std::vector<double> wholeDumps, partDumps;
    for (int run = 0; run < kDumpRuns && ok; ++run)
        for (int k = 0; k < 2 && ok; ++k) {
            bool against = (k + run) % 2 == 1;
            ok = timedDump(rig, root + "/timed", against ? &chain[1] : nullptr,
                           against ? partDumps : wholeDumps);
        }
    std::vector<double> full, three;
    for (int run = 0; run < kRestoreRuns && ok; ++run) {
        for (int k = 0; k < 2; ++k) { // each first in turn
            bool whole = (k + run) % 2 == 0;
            (whole ? full : three)
                .push_back(whole ? restoreChain(rig, chain, 0, 1) : restoreChain(rig, chain, 2, 3));
        }
        ok = full.back() >= 0 && three.back() >= 0;
    }
    std::filesystem::remove_all(root);
    if (!ok)
        return 1;
    double ratioBytes =
        static_cast<double>(chain[1].allocated) / static_cast<double>(chain[0].allocated);
    double wholeDump = benchutil::median(wholeDumps), partDump = benchutil::median(partDumps);
    double ratioTime = partDump / wholeDump;
    double ratioRestore = benchutil::median(three) / benchutil::median(full);
    printf("bench.content_increment: one GPU lane, %.0f MiB in %.0f MiB BOs, chunks of %.0f MiB, "
           "10%% of the chunks rewritten between dumps, %s, fake SDMA (memcpy), XXH3-64 + XXH3-128 "
           "(%s)\n",
           mib(total), mib(kBo), mib(kChunk), base.c_str(), benchutil::conditions().c_str());
    for (size_t l = 0; l < chain.size(); ++l)
        printf("  dump %zu%s: %.1f MiB allocated in %.3f s (%.0f MiB/s of contents)\n", l + 1,
               l ? " (against the previous)" : " (full)", mib(chain[l].allocated), chain[l].seconds,
               benchutil::mibPerSecond(total, chain[l].seconds));
    printf("  second dump's bytes: %.3f of the first's (target: at most 0.12): %s\n", ratioBytes,
           ratioBytes <= 0.12 ? "met" : "NOT met");
    printf("  a dump against its parent: %.3f s, a full dump of the same bytes: %.3f s (medians of "
           "%d each, taking turns): %.3f (target: at most 0.35): %s\n",
           partDump, wholeDump, kDumpRuns, ratioTime, ratioTime <= 0.35 ? "met" : "NOT met");
    printf("  restore of the chain of three: %.3f s, of the full image: %.3f s: %.2f x (target: at "
           "most 1.1, warm page cache, medians of %d): %s\n",
           benchutil::median(three), benchutil::median(full), ratioRestore, kRestoreRuns,
           ratioRestore <= 1.1 ? "met" : "NOT met");
    const char* bench = "bench.content_increment";
    std::string shape = benchutil::text("%.0f MiB, 10%% of the 2 MiB chunks rewritten, %s",
                                        mib(total), base.c_str());
    benchutil::figure(bench, "second dump's bytes, " + shape,
                      benchutil::text("%.1f MiB allocated: %.3f of the first's",
                                      mib(chain[1].allocated), ratioBytes),
                      benchutil::text("the first dump, %.1f MiB", mib(chain[0].allocated)),
                      "at most 0.12", benchutil::met(ratioBytes <= 0.12));
    benchutil::figure(bench,
                      benchutil::text("a dump against its parent, %s, median of %d in turns",
                                      shape.c_str(), kDumpRuns),
                      benchutil::text("%.3f s: %.3f of a full dump's", partDump, ratioTime),
                      benchutil::text("a full dump of the same bytes, %.3f s", wholeDump),
                      "at most 0.35", benchutil::met(ratioTime <= 0.35));
    benchutil::figure(bench, "restore of a chain of three, warm page cache",
                      benchutil::text("%.3f s: %.2f x", benchutil::median(three), ratioRestore),
                      benchutil::text("a full image, %.3f s", benchutil::median(full)),
                      "at most 1.1 x", benchutil::met(ratioRestore <= 1.1));
    return 0;
}
