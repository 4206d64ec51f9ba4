// bench.encryption: the ciphers of `content-encryption` (formats/content_cipher.h, OpenSSL) in one
// run: seal and open MiB/s per core of AES-256-GCM and ChaCha20-Poly1305 on 64 MiB in frames of
// 2 MiB (one thread, medians of 3), and the same with GnuTLS's AEAD, which seals nothing here
// (the comparison behind using OpenSSL's), beside the disk's write speed (256 MiB written and
// fsync'd in the directory the dumps go to) and the uncompressed dump lane's; then one GPU lane
// dumping and restoring $BENCH_MIB (default 256) MiB of incompressible bytes in 64 MiB BOs into
// packed files (written past the page cache, `direct-write`'s default), unencrypted and encrypted
// with each cipher, and unencrypted through the page cache (direct-write off), taking turns (five
// turns, bench_util.h says why: in each, two dumps with their syncfs and, apart, the lane alone,
// the fastest of 10; three restores from the disk, the fastest of 15, each starting with no key
// read, as a restore does; one from the page cache, the fastest of 5): the throughput with
// encryption as a ratio to without, against the 0.9 the issue asks, and how busy the disk was
// during the restores from it. Exits non-zero only when it could not measure.
#include "bench_lane_rig.h"
#include "bench_util.h"
#include "test_keys.h"

#include "formats/content_keys.h"
#include "formats/packed_image.h"

#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <filesystem>
#include <random>

namespace {

constexpr uint64_t kBo = 64ull << 20;
constexpr uint64_t kStaging = 32ull << 20;
constexpr size_t kFrame = 2ull << 20;
constexpr size_t kAeadBytes = 64ull << 20;
constexpr int kRuns = 3;
constexpr int kLaneRuns = 5; // dumps and restores of each kind, taking turns
/// Restores from the disk after each dump: the disk's pace here changes from one run to the next
/// by more than encryption costs, and a restore from it takes a fraction of a second.
constexpr int kColdRuns = 3;
/// Dumps of each kind in a turn, for the same reason: the disk's write speed changes as much.
constexpr int kDumpRuns = 2;

void fillRandom(std::byte* data, uint64_t n) {
    std::mt19937_64 rng(7);
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = rng();
        memcpy(data + i, &v, 8);
    }
}

/// Seal and open MiB/s of `cipher` on kAeadBytes in frames, one thread; negative on failure.
std::pair<double, double> aeadSpeed(formats::Cipher cipher) {
    formats::MasterKey master{};
    formats::CheckpointId id{};
    auto keys = formats::SealKeys::derive(cipher, master, id);
    if (!keys.ok())
        return {-1, -1};
    auto aead = formats::Aead::make(*keys);
    if (!aead.ok())
        return {-1, -1};
    std::vector<std::byte> plain(kFrame), sealed(formats::maxSealedFrame(kFrame)), back(kFrame);
    fillRandom(plain.data(), plain.size());
    formats::FramePlace place{"bench.img", kAeadBytes, 0, kAeadBytes / kFrame};
    bool ok = true;
    double seal = benchutil::medianSeconds(kRuns, [&] {
        for (place.index = 0; place.index < place.count; ++place.index)
            ok = ok && (*aead)->seal(place, plain, sealed).ok();
    });
    place.index = 0;
    auto one = (*aead)->seal(place, plain, sealed);
    ok = ok && one.ok();
    size_t length = ok ? one->size() : 0;
    double open = benchutil::medianSeconds(kRuns, [&] {
        for (size_t i = 0; i < place.count; ++i)
            ok = ok && (*aead)->open(place, std::span(sealed).first(length), back).ok();
    });
    if (!ok || back != plain)
        return {-1, -1};
    return {benchutil::mibPerSecond(kAeadBytes, seal), benchutil::mibPerSecond(kAeadBytes, open)};
}

/// The same seal and open with GnuTLS's AEAD (the library that seals nothing here, for the
/// comparison the top CMakeLists.txt gives for choosing OpenSSL's): MiB/s per core.
std::pair<double, double> gnutlsAeadSpeed(formats::Cipher cipher) {
    gnutls_cipher_algorithm_t alg = cipher == formats::Cipher::Chacha20Poly1305
                                        ? GNUTLS_CIPHER_CHACHA20_POLY1305
                                        : GNUTLS_CIPHER_AES_256_GCM;
    unsigned char key[32] = {1}, nonce[formats::kNonceBytes] = {2}, ad[16] = {3};
    gnutls_datum_t datum{key, sizeof key};
    gnutls_aead_cipher_hd_t handle = nullptr;
    if (gnutls_aead_cipher_init(&handle, alg, &datum) < 0)
        return {-1, -1};
    std::vector<std::byte> plain(kFrame), sealed(kFrame + formats::kTagBytes), back(kFrame);
    fillRandom(plain.data(), plain.size());
    bool ok = true;
    auto eachFrame = [&](auto step) { // seconds for kAeadBytes, frame by frame
        return benchutil::medianSeconds(kRuns, [&] {
            for (uint64_t i = 0; i < kAeadBytes / kFrame; ++i)
                ok = ok && step() == 0;
        });
    };
    double seal = eachFrame([&] {
        size_t n = sealed.size();
        return gnutls_aead_cipher_encrypt(handle, nonce, sizeof nonce, ad, sizeof ad,
                                          formats::kTagBytes, plain.data(), plain.size(),
                                          sealed.data(), &n);
    });
    double open = eachFrame([&] {
        size_t n = back.size();
        return gnutls_aead_cipher_decrypt(handle, nonce, sizeof nonce, ad, sizeof ad,
                                          formats::kTagBytes, sealed.data(), sealed.size(),
                                          back.data(), &n);
    });
    gnutls_aead_cipher_deinit(handle);
    if (!ok || back != plain)
        return {-1, -1};
    return {benchutil::mibPerSecond(kAeadBytes, seal), benchutil::mibPerSecond(kAeadBytes, open)};
}

/// MiB/s of writing `bytes` of `data` to a file in `dir`, fsync'd.
double diskWrite(const std::string& dir, const std::byte* data, uint64_t bytes) {
    std::string path = dir + "/disk.bin";
    double s = benchutil::medianSeconds(kRuns, [&] {
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        for (uint64_t at = 0; at < bytes && fd >= 0; at += kFrame)
            if (write(fd, data + at, std::min<uint64_t>(kFrame, bytes - at)) < 0)
                break;
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    });
    std::filesystem::remove(path);
    return benchutil::mibPerSecond(bytes, s);
}

/// Runs of one kind that use the disk: their seconds, and the share of their time the disk had
/// requests in flight (benchutil::diskBusyMs).
struct DiskRuns {
    std::vector<double> seconds;
    double knownMs = 0; ///< milliseconds of the runs whose disk time is known
    double busyMs = 0;  ///< of which the disk was busy

    /// Times `run` with the disk holding `dir`.
    template <typename Run> void time(const std::string& dir, Run&& run) {
        long long busy = benchutil::diskBusyMs(dir);
        double s = benchutil::secondsOf(run);
        long long busyAfter = benchutil::diskBusyMs(dir);
        seconds.push_back(s);
        if (busy >= 0 && busyAfter >= busy) {
            knownMs += s * 1e3;
            busyMs += static_cast<double>(busyAfter - busy);
        }
    }
    std::string diskBusy() const {
        return knownMs > 0
                   ? benchutil::text("the disk busy %.0f%% of the time", 100.0 * busyMs / knownMs)
                   : std::string("the disk's busy time unknown");
    }
};

struct Figures {
    DiskRuns dump;                ///< to the disk (syncfs)
    std::vector<double> dumpLane; ///< seconds of the lane alone (before syncfs)
    DiskRuns coldRestore;         ///< from the disk (the files' pages dropped first)
    std::vector<double> restore;  ///< seconds, from the page cache
};

/// Drops the pages of every file of `dir` from the page cache, so the next read comes from the
/// disk. False when the kernel refuses.
bool dropFromPageCache(const std::string& dir) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (!benchutil::evictFromPageCache(e.path()))
            return false;
    return true;
}

/// Reads every file of `dir` through the page cache, so that the next restore finds it there.
/// False when one cannot be read.
bool readThroughPageCache(const std::string& dir) {
    std::vector<char> buffer(1 << 20);
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        int fd = open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return false;
        ssize_t n;
        while ((n = read(fd, buffer.data(), buffer.size())) > 0) {
        }
        close(fd);
        if (n < 0)
            return false;
    }
    return true;
}

/// kDumpRuns dumps of the rig's VRAM into `dir` as packed files, with `cipher`, then kColdRuns
/// restores from the disk and one from the page cache, added to `out`. `direct`: the `direct-write`
/// option (on by default), off for the page cache's figure.
bool dumpAndRestore(benchutil::LaneRig& rig, const std::string& dir, formats::Cipher cipher,
                    const testsupport::KeyFiles& keys, Figures& out, bool direct = true) {
    std::vector<datapath::DumpImage> dumped = rig.dumpImages();
    for (datapath::DumpImage& image : dumped) {
        image.name = formats::packedImageName("amdgpu-" + image.name);
        image.create = [&rig, name = image.name] {
            return formats::createContentsImage(*rig.store, name, rig.boSize, {});
        };
    }
    bool ok = true;
    for (int i = 0; i < kDumpRuns && ok; ++i) {
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        auto store = formats::openDirectoryStore(dir);
        if (!store.ok())
            return false;
        rig.store = std::move(store).value();
        rig.store->contentKeys().configure({cipher, keys.certificate, keys.privateKey});
        rig.store->setDirectWrites(direct);
        int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        out.dump.time(dir, [&] {
            out.dumpLane.push_back(benchutil::secondsOf([&] {
                auto r = datapath::runDumpLane(dumped, rig.lane(true));
                if (!r.ok())
                    fprintf(stderr, "bench.encryption: %s\n", r.error().describe().c_str());
                ok = r.ok();
            }));
            syncfs(fd);
        });
        close(fd);
    }
    if (!ok)
        return false;
    // Each restore opens the checkpoint afresh: it has read no key yet.
    auto openForRestore = [&] {
        auto reading = formats::openDirectoryStore(dir);
        if (!reading.ok())
            return false;
        rig.store = std::move(reading).value();
        // The unencrypted checkpoint is read as a node without a key reads it (a node with one
        // restores only encrypted checkpoints).
        rig.store->contentKeys().configure(
            {formats::Cipher::None, "", cipher == formats::Cipher::None ? "" : keys.privateKey});
        return true;
    };
    std::vector<datapath::RestoreImage> images = rig.restoreImages(dumped, true);
    for (datapath::RestoreImage& image : images)
        image.open = [&rig, name = image.name] {
            return formats::openContentsImage(*rig.store, name);
        };
    auto restoreOnce = [&] {
        auto r = datapath::runRestoreLane(images, rig.lane(true));
        if (!r.ok())
            fprintf(stderr, "bench.encryption: %s\n", r.error().describe().c_str());
        ok = ok && r.ok();
    };
    for (int i = 0; i < kColdRuns; ++i) {
        if (!dropFromPageCache(dir)) {
            fprintf(stderr, "bench.encryption: cannot drop %s from the page cache\n", dir.c_str());
            return false;
        }
        if (!openForRestore())
            return false;
        out.coldRestore.time(dir, restoreOnce);
    }
    // The restores from the disk read the files past the page cache: read them through it
    // first, so that this restore finds them there and reads them from it, as one does.
    if (!readThroughPageCache(dir) || !openForRestore())
        return false;
    out.restore.push_back(benchutil::secondsOf(restoreOnce));
    return ok;
}

} // namespace

int main() {
    std::string base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    std::string root = base + "/criu-amdgpu-enc.XXXXXX";
    if (!mkdtemp(root.data())) {
        fprintf(stderr, "bench.encryption: cannot make a directory in %s\n", base.c_str());
        return 1;
    }
    testsupport::KeyFiles keys = testsupport::writeTestKeys(root);
    uint64_t total = getenv("BENCH_MIB") ? benchutil::laneBenchBytes(kBo) : 256ull << 20;
    benchutil::LaneRig rig(total, kBo, kStaging);
    if (!rig.allocated("bench.encryption"))
        return 1;
    fillRandom(rig.vram.get(), total);
    const formats::Cipher ciphers[] = {formats::Cipher::Aes256Gcm,
                                       formats::Cipher::Chacha20Poly1305};
    printf("bench.encryption: the AEAD %s, the keys GnuTLS %s, frames of 2 MiB, %s, %s\n",
           OpenSSL_version(OPENSSL_VERSION), gnutls_check_version(nullptr), base.c_str(),
           benchutil::conditions().c_str());
    bool ok = true;
    const char* bench = "bench.encryption";
    double disk = diskWrite(root, rig.vram.get(), std::min<uint64_t>(total, 256ull << 20));
    for (formats::Cipher c : ciphers) {
        auto [seal, open] = aeadSpeed(c);
        ok = ok && seal > 0;
        printf("  %-18s seal %6.0f MiB/s per core, open %6.0f MiB/s per core\n",
               formats::cipherName(c), seal, open);
        benchutil::figure(bench, benchutil::text("%s, one thread", formats::cipherName(c)),
                          benchutil::text("seal %.0f MiB/s, open %.0f MiB/s per core", seal, open),
                          benchutil::text("the disk: %.0f MiB/s written and fsync'd", disk), "none",
                          "none");
        auto [gSeal, gOpen] = gnutlsAeadSpeed(c);
        ok = ok && gSeal > 0;
        printf("  %-18s GnuTLS %s, not used for it: seal %6.0f MiB/s, open %6.0f MiB/s per core\n",
               formats::cipherName(c), gnutls_check_version(nullptr), gSeal, gOpen);
        benchutil::figure(
            bench, benchutil::text("%s with GnuTLS, one thread (not used)", formats::cipherName(c)),
            benchutil::text("seal %.0f MiB/s, open %.0f MiB/s per core", gSeal, gOpen),
            benchutil::text("OpenSSL: seal %.0f MiB/s, open %.0f MiB/s", seal, open), "none",
            "none");
    }
    printf("  disk: %.0f MiB/s written and fsync'd (256 MiB)\n", disk);
    // 0: unencrypted, 1 and 2: each cipher, 3: unencrypted through the page cache.
    Figures figures[4];
    for (int run = 0; run < kLaneRuns && ok; ++run)
        for (int c = 0; c < 4 && ok; ++c)
            ok = dumpAndRestore(rig, root + "/ck",
                                c % 3 == 0 ? formats::Cipher::None : ciphers[c - 1], keys,
                                figures[c], c != 3);
    std::filesystem::remove_all(root);
    if (!ok)
        return 1;
    auto mibs = [total](double seconds) { return benchutil::mibPerSecond(total, seconds); };
    double plainDump = benchutil::fastest(figures[0].dump.seconds),
           plainRestore = benchutil::fastest(figures[0].restore);
    double plainCold = benchutil::fastest(figures[0].coldRestore.seconds);
    double plainLane = benchutil::fastest(figures[0].dumpLane);
    printf("  one GPU lane, %.0f MiB of incompressible bytes in BOs of 64 MiB, packed files, "
           "fake SDMA (memcpy), the fastest of %d dumps and %d restores from the disk of each "
           "kind, taken in turns (bench_util.h says why):\n",
           static_cast<double>(total) / (1 << 20), kLaneRuns * kDumpRuns, kLaneRuns * kColdRuns);
    printf("  %-18s dump %6.0f MiB/s (to the disk, syncfs; %s), restore %6.0f MiB/s from the "
           "disk (%s), %6.0f MiB/s from the page cache\n",
           "unencrypted", mibs(plainDump), figures[0].dump.diskBusy().c_str(), mibs(plainCold),
           figures[0].coldRestore.diskBusy().c_str(), mibs(plainRestore));
    // What `direct-write` gives: the same dump written through the page cache.
    double cachedDump = benchutil::fastest(figures[3].dump.seconds),
           cachedLane = benchutil::fastest(figures[3].dumpLane);
    printf("  %-18s dump %6.0f MiB/s (to the disk, syncfs; the lane alone %6.0f MiB/s) with "
           "direct-write off: %.2f x the speed with it on\n",
           "unencrypted", mibs(cachedDump), mibs(cachedLane), plainDump / cachedDump);
    benchutil::figure(
        bench, "dump unencrypted to the disk through the page cache (direct-write off)",
        benchutil::text("%.0f MiB/s", mibs(cachedDump)),
        benchutil::text("direct-write on: %.0f MiB/s", mibs(plainDump)), "none", "none");
    // The target is the issue's: dump and restore at the speed of this machine's disk. A restore
    // from the page cache shows what one lane's decryption costs where no disk limits it.
    for (int c = 1; c < 3; ++c) {
        const char* name = formats::cipherName(ciphers[c - 1]);
        double dumpS = benchutil::fastest(figures[c].dump.seconds),
               coldS = benchutil::fastest(figures[c].coldRestore.seconds);
        double warmS = benchutil::fastest(figures[c].restore);
        double d = plainDump / dumpS, cold = plainCold / coldS, warm = plainRestore / warmS;
        printf("  %-18s dump %6.0f MiB/s: %.2f x unencrypted (target: at least 0.9): %s; restore "
               "from the disk %6.0f MiB/s: %.2f x (target: at least 0.9): %s, %s; from the page "
               "cache %6.0f MiB/s: %.2f x; the medians' ratios: dump %.2f x, restore from the "
               "disk %.2f x\n",
               name, mibs(dumpS), d, benchutil::met(d >= 0.9), mibs(coldS), cold,
               benchutil::met(cold >= 0.9), figures[c].coldRestore.diskBusy().c_str(), mibs(warmS),
               warm,
               benchutil::median(figures[0].dump.seconds) /
                   benchutil::median(figures[c].dump.seconds),
               benchutil::median(figures[0].coldRestore.seconds) /
                   benchutil::median(figures[c].coldRestore.seconds));
        benchutil::figure(bench,
                          benchutil::text("dump with %s to the disk, one GPU lane, incompressible "
                                          "bytes",
                                          name),
                          benchutil::text("%.0f MiB/s: %.2f x; %s", mibs(dumpS), d,
                                          figures[c].dump.diskBusy().c_str()),
                          benchutil::text("unencrypted: %.0f MiB/s; %s", mibs(plainDump),
                                          figures[0].dump.diskBusy().c_str()),
                          "at least 0.9 x", benchutil::met(d >= 0.9));
        double laneS = benchutil::fastest(figures[c].dumpLane), lane = plainLane / laneS;
        printf("  %-18s dump, the lane alone (before syncfs) %6.0f MiB/s: "
               "%.2f x unencrypted (%.0f MiB/s)\n",
               name, mibs(laneS), lane, mibs(plainLane));
        benchutil::figure(bench,
                          benchutil::text("dump with %s, the lane alone (one lane's "
                                          "encryption, before syncfs)",
                                          name),
                          benchutil::text("%.0f MiB/s: %.2f x", mibs(laneS), lane),
                          benchutil::text("unencrypted: %.0f MiB/s", mibs(plainLane)), "none",
                          "none");
        benchutil::figure(bench, benchutil::text("restore with %s from the disk", name),
                          benchutil::text("%.0f MiB/s: %.2f x; %s", mibs(coldS), cold,
                                          figures[c].coldRestore.diskBusy().c_str()),
                          benchutil::text("unencrypted: %.0f MiB/s; %s", mibs(plainCold),
                                          figures[0].coldRestore.diskBusy().c_str()),
                          "at least 0.9 x", benchutil::met(cold >= 0.9));
        benchutil::figure(bench,
                          benchutil::text("restore with %s from the page cache (one lane's "
                                          "decryption, no disk)",
                                          name),
                          benchutil::text("%.0f MiB/s: %.2f x", mibs(warmS), warm),
                          benchutil::text("unencrypted: %.0f MiB/s", mibs(plainRestore)), "none",
                          "none");
    }
    return 0;
}
