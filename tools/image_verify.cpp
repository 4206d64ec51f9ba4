// criu-amdgpu image verify: every contents file of a checkpoint checked against its image (the
// 8-byte size header, the size, the checksum where the dump recorded one), and the amdgpu images
// against criu's own (dump_completeness.h), without restoring.
#include "chain_contents.h"
#include "dump_completeness.h"
#include "image_catalog.h"
#include "image_commands.h"
#include "json_output.h"
#include "printable.h"

#include "command.h"

#include "config/config.h"
#include "config/sources.h"
#include "content/stream.h"
#include "formats/checkpoint_manifest.h"
#include "formats/framed_image.h"
#include "formats/packed_image.h"

#include <cstdio>
#include <vector>

namespace tools::image {
namespace {

/// What is wrong with one file: the first byte offset where it goes wrong, and why.
struct Problem {
    std::string file;
    int64_t offset = -1; ///< -1: the whole file (missing, unreadable)
    std::string what;
};

/// The BO that holds contents byte `at` (an offset after the header), for messages.
std::string boAt(const ContentsFile& f, uint64_t at) {
    for (const BoSpan& b : f.bos)
        if (at >= b.offset && at < b.offset + b.size)
            return base::strFormat(
                "%s (bytes %llu..%llu of the file)", b.label.c_str(),
                static_cast<unsigned long long>(formats::kImageHeaderBytes + b.offset),
                static_cast<unsigned long long>(formats::kImageHeaderBytes + b.offset + b.size -
                                                1));
    return "no BO";
}

/// A sink that keeps nothing: the lane's checksum is what is checked.
class DiscardSink final : public content::ContentSink {
public:
    base::Result<void> write(uint64_t, std::span<const std::byte>) override {
        return base::success();
    }
};

/// Checks one contents file; nullopt when it is sound.
std::optional<Problem> verifyFile(formats::ImageStore& store, const ContentsFile& f) {
    auto h = [&](int64_t off, std::string what) { return Problem{f.name, off, std::move(what)}; };
    if (f.chain && store.exists(f.name)) {
        DiscardSink discard;
        if (auto assembled = assembleContents(store, f, discard); !assembled.ok())
            return h(-1, assembled.error().describe());
        return std::nullopt;
    }
    if (!store.exists(f.name))
        return h(-1, "missing (" + f.owner + " calls for it)");
    auto opened = formats::openContentsImage(store, f.name);
    if (!opened)
        return h(0, opened.error().describe());
    formats::FramedImage& file = *opened;
    if (f.headerIsSize && file.announced != f.bytes)
        return h(0, base::strFormat("the size header says %llu bytes, the BOs of %s hold %llu",
                                    static_cast<unsigned long long>(file.announced),
                                    f.owner.c_str(), static_cast<unsigned long long>(f.bytes)));
    if (file.contents >= 0 && static_cast<uint64_t>(file.contents) < f.bytes) {
        uint64_t end = static_cast<uint64_t>(file.contents);
        return h(static_cast<int64_t>(formats::kImageHeaderBytes + end),
                 base::strFormat("the file ends here, %llu bytes short: %s is cut off",
                                 static_cast<unsigned long long>(f.bytes - end),
                                 boAt(f, end).c_str()));
    }
    if (file.contents >= 0 && static_cast<uint64_t>(file.contents) > f.bytes)
        return h(static_cast<int64_t>(formats::kImageHeaderBytes + f.bytes),
                 base::strFormat("%llu bytes follow the last BO",
                                 static_cast<unsigned long long>(file.contents - f.bytes)));
    // A file without a recorded checksum is read whole all the same when it is packed: every
    // frame of an encrypted one is opened, and so authenticated, every compressed one decoded.
    // Other files without one (CRIU's plugin records none) are checked by their size only.
    if (!f.checksum && !file.reader->sealed() && !formats::isPackedImageName(f.name))
        return std::nullopt;
    content::ContentDigest digest(f.checksum ? f.checksum->kind : content::DigestKind::Xxh3_64);
    std::vector<std::byte> buf(1 << 20);
    for (uint64_t off = 0; off < f.bytes;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), f.bytes - off));
        auto read = file.reader->readExact(std::span(buf).first(n));
        if (!read)
            return h(static_cast<int64_t>(formats::kImageHeaderBytes + off),
                     read.error().describe());
        digest.update(std::span(buf).first(n));
        off += n;
    }
    if (auto end = formats::expectImageEnd(file, f.bytes); !end)
        return h(static_cast<int64_t>(formats::kImageHeaderBytes + f.bytes),
                 end.error().describe());
    if (!f.checksum && file.reader->sealed())
        return h(-1, base::strFormat("encrypted contents, and %s records no checksum for them (an "
                                     "encrypted checkpoint records one for every contents file: "
                                     "its metadata was changed)",
                                     f.owner.c_str()));
    if (!f.checksum || file.reader->keyedChecksum(digest.value()) == f.checksum->value)
        return std::nullopt;
    // One checksum covers the whole file: the bad byte is somewhere in it, the first BO is where
    // it may start.
    return h(
        static_cast<int64_t>(formats::kImageHeaderBytes),
        base::strFormat("the contents do not match the checksum recorded at dump (%s "
                        "%016llx, read %016llx): a byte from here to offset %llu differs, "
                        "starting at the earliest in %s",
                        content::digestName(f.checksum->kind),
                        static_cast<unsigned long long>(f.checksum->value),
                        static_cast<unsigned long long>(digest.value()),
                        static_cast<unsigned long long>(formats::kImageHeaderBytes + f.bytes - 1),
                        boAt(f, 0).c_str()));
}

/// The verdict: "sound", "damaged", or "no amdgpu image" (and nothing damaged).
const char* verdictOf(bool sound, const Checkpoint& c) {
    if (!sound)
        return "damaged";
    return c.imageCount() == 0 ? "no amdgpu image" : "sound";
}

/// The --json object, keys in this order: dir (string), checked (integer: contents files
/// checked), checksummed (integer: of which had a recorded checksum), problems (array of {file,
/// offset (integer, -1 for the whole file), what}), undecodable (array of {image, error}),
/// amdgpu_images (integer), criu_images (array of the names of criu's own images found), notes
/// (array of strings: what could not be checked), verdict ("sound", "damaged" or "no amdgpu
/// image"), and with the last verdict reason (string).
tools::Json verifyJson(const Checkpoint& c, size_t checksummed,
                       const std::vector<Problem>& problems,
                       const std::vector<Problem>& undecodable, const criu_images::CriuFacts& criu,
                       const Completeness& whole) {
    tools::Json j;
    j["dir"] = c.dir;
    j["checked"] = c.contents.size();
    j["checksummed"] = checksummed;
    j["problems"] = tools::Json::array();
    for (const Problem& p : problems)
        j["problems"].push_back({{"file", p.file}, {"offset", p.offset}, {"what", p.what}});
    j["undecodable"] = tools::Json::array();
    for (const Problem& p : undecodable)
        j["undecodable"].push_back({{"image", p.file}, {"error", p.what}});
    j["amdgpu_images"] = c.imageCount();
    j["criu_images"] = criu.images;
    j["notes"] = whole.notes;
    std::string verdict = verdictOf(problems.empty() && undecodable.empty(), c);
    j["verdict"] = verdict;
    if (verdict == "no amdgpu image")
        j["reason"] = whole.noGpuState;
    return j;
}

template <class T>
void collectUndecodable(const std::vector<Decoded<T>>& list, std::vector<Problem>& out) {
    for (const auto& d : list)
        if (!d.value)
            out.push_back({d.name, -1, d.error});
}

} // namespace

int runVerify(const std::string& dir, bool json, const std::string& key) {
    auto settings = config::loadSettings(config::Sources::fromProcessEnvironment());
    if (!settings) {
        fprintf(stderr, "criu-amdgpu image verify: %s\n",
                printable(settings.error().describe()).c_str());
        return kExitBadInput;
    }
    auto checkpoint = readCheckpoint(dir, keyOptionsOf(*settings, key));
    if (!checkpoint) {
        fprintf(stderr, "criu-amdgpu image verify: %s\n",
                printable(checkpoint.error().describe()).c_str());
        return kExitBadInput;
    }
    const Checkpoint& c = *checkpoint;
    criu_images::CriuFacts criu = criu_images::readCriuFacts(dir);
    Completeness whole = checkCompleteness(c, criu);
    std::vector<Problem> problems, undecodable;
    SignatureVerdict signature = checkSignature(dir, settings->trustedCertificates);
    if (!signature.refusal.empty())
        problems.push_back({formats::kManifestImageName, -1, signature.refusal});
    for (const Missing& m : whole.problems)
        problems.push_back({m.file, -1, m.what});
    for (const std::string& b : c.brokenChains)
        problems.push_back({"chain", -1, b});
    collectUndecodable(c.kfd, undecodable);
    collectUndecodable(c.render, undecodable);
    collectUndecodable(c.dmabuf, undecodable);
    if (c.topology && !c.topology->value)
        undecodable.push_back({c.topology->name, -1, c.topology->error});
    size_t checksummed = 0;
    for (const ContentsFile& f : c.contents) {
        checksummed += f.checksum.has_value();
        if (auto p = verifyFile(*c.store, f))
            problems.push_back(std::move(*p));
    }
    bool sound = problems.empty() && undecodable.empty();
    int status = !sound ? kExitProblem : c.imageCount() == 0 ? kExitBadInput : 0;
    if (json) {
        printJson(verifyJson(c, checksummed, problems, undecodable, criu, whole));
        return status;
    }
    if (sound && c.imageCount() == 0) {
        fprintf(stderr, "criu-amdgpu image verify: no amdgpu image in %s: %s\n",
                printable(dir).c_str(), printable(whole.noGpuState).c_str());
        return status;
    }
    for (const Problem& p : undecodable)
        printf("%s: cannot be decoded: %s\n", printable(p.file).c_str(), printable(p.what).c_str());
    for (const Problem& p : problems) {
        if (p.offset < 0)
            printf("%s: %s\n", printable(p.file).c_str(), printable(p.what).c_str());
        else
            printf("%s: at offset %lld: %s\n", printable(p.file).c_str(),
                   static_cast<long long>(p.offset), printable(p.what).c_str());
    }
    for (const std::string& n : whole.notes)
        printf("note: %s\n", printable(n).c_str());
    if (!signature.summary.empty())
        printf("%s\n", printable(signature.summary).c_str());
    printf("%zu contents file(s) checked (%zu with a recorded checksum): %s\n", c.contents.size(),
           checksummed, sound ? "all sound" : "the checkpoint is damaged");
    return status;
}

} // namespace tools::image
