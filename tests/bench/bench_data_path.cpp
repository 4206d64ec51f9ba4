// bench.data_path: the whole in-memory data path of one GPU, a content lane with a fake SDMA
// copy (memcpy from "VRAM" in host memory), the checksum, and image files in /dev/shm, against
// the same lane without the checksum, in the same run; dump and restore. Exits non-zero only when
// it could not measure.
#include "bench_lane_rig.h"
#include "bench_util.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

namespace {

constexpr uint64_t kVram = 512ull << 20;   // the GPU's contents
constexpr uint64_t kBo = 64ull << 20;      // in BOs of this size
constexpr uint64_t kStaging = 64ull << 20; // max-buffer-size's default
constexpr int kRuns = 5;

} // namespace

int main() {
    benchutil::LaneRig rig(kVram, kBo, kStaging);
    char tmpl[] = "/dev/shm/criu-amdgpu-bench.XXXXXX";
    if (!rig.vram || !mkdtemp(tmpl)) {
        fprintf(stderr, "bench.data_path: cannot allocate %llu MiB or a directory in /dev/shm\n",
                static_cast<unsigned long long>(kVram >> 20));
        return 1;
    }
    const std::string dir = tmpl;
    auto store = formats::openDirectoryStore(dir);
    if (!store.ok()) {
        fprintf(stderr, "bench.data_path: %s\n", store.error().describe().c_str());
        return 1;
    }
    rig.store = std::move(store).value();
    for (uint64_t i = 0; i < kVram; ++i)
        rig.vram[i] = static_cast<std::byte>(i * 131 + (i >> 13));

    bool failed = false;
    std::vector<datapath::DumpImage> last;
    auto dump = [&](bool hash) {
        return benchutil::medianSeconds(kRuns, [&] {
            auto images = rig.dumpImages();
            auto r = datapath::runDumpLane(images, rig.lane(hash));
            failed = failed || !r.ok();
            if (hash)
                last = std::move(images);
        });
    };
    auto restore = [&](bool hash) {
        return benchutil::medianSeconds(kRuns, [&] {
            auto images = rig.restoreImages(last, hash);
            auto r = datapath::runRestoreLane(images, rig.lane(hash));
            failed = failed || !r.ok();
        });
    };
    double dumpBare = dump(false), dumpHashed = dump(true);
    double restoreBare = restore(false), restoreHashed = restore(true);
    std::filesystem::remove_all(dir);
    if (failed || dumpBare <= 0 || restoreBare <= 0) {
        fprintf(stderr, "bench.data_path: a lane failed or took no measurable time\n");
        return 1;
    }
    printf("bench.data_path: one GPU lane, %llu MiB in %llu MiB BOs, fake SDMA (memcpy) <-> "
           "staging (%llu MiB, %u slots) <-> image files in /dev/shm, medians of %d runs (%s)\n",
           static_cast<unsigned long long>(kVram >> 20), static_cast<unsigned long long>(kBo >> 20),
           static_cast<unsigned long long>(kStaging >> 20), datapath::kLaneSlots, kRuns,
           benchutil::conditions().c_str());
    auto line = [](const char* what, double bare, double hashed) {
        double b = benchutil::mibPerSecond(kVram, bare), h = benchutil::mibPerSecond(kVram, hashed);
        printf("  %-8s without checksum %7.0f MiB/s (the limit), with XXH3-64 %7.0f MiB/s: "
               "%.2f (target: at least 0.8)\n",
               what, b, h, h / b);
        benchutil::figure("bench.data_path",
                          benchutil::text("%s, 512 MiB, fake SDMA, /dev/shm", what),
                          benchutil::text("with XXH3-64 %.0f MiB/s", h),
                          benchutil::text("the same lane without it %.0f MiB/s (%.2f)", b, h / b),
                          "at least 0.8 of the limit", benchutil::met(h / b >= 0.8));
    };
    line("dump", dumpBare, dumpHashed);
    line("restore", restoreBare, restoreHashed);
    return 0;
}
