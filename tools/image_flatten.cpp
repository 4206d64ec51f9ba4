// criu-amdgpu image flatten: an incremental checkpoint made self-contained in a new directory,
// every BO's contents assembled from its chain under the names a full dump gives them.
#include "chain_contents.h"
#include "image_catalog.h"
#include "image_commands.h"

#include "command.h"
#include "printable.h"

#include "content/zero_runs.h"
#include "formats/chunk_map.h"
#include "formats/framed_image.h"
#include "formats/image_chain.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

namespace tools::image {
namespace {
namespace fs = std::filesystem;

/// Writes the bytes a lane hands it, in order, to a framed image; runs of zeros become holes.
class WriterSink final : public content::ContentSink {
public:
    explicit WriterSink(formats::ImageWriter& out) : out_(out) {}
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        if (offset != done_)
            return base::makeError(base::ErrorCode::Internal, "bytes at %llu, expected at %llu",
                                   static_cast<unsigned long long>(offset),
                                   static_cast<unsigned long long>(done_));
        constexpr size_t kBlock = 64 << 10;
        for (size_t at = 0; at < in.size(); at += kBlock) {
            std::span<const std::byte> part = in.subspan(at, std::min(kBlock, in.size() - at));
            if (content::isAllZero(part))
                HAL_TRY(out_.writeZeros(part.size()));
            else
                HAL_TRY(out_.write(part));
        }
        done_ += in.size();
        return base::success();
    }

private:
    formats::ImageWriter& out_;
    uint64_t done_ = 0;
};

/// Removes the directory a failed flatten made, unless it succeeded.
struct OutGuard {
    fs::path dir;
    bool made = false;
    bool keep = false;
    ~OutGuard() {
        std::error_code ec;
        if (made && !keep)
            fs::remove_all(dir, ec); // removes links in it, never what they point at
    }
};

int fail(const std::string& message, int status) {
    fprintf(stderr, "criu-amdgpu image flatten: %s\n", printable(message).c_str());
    return status;
}

/// Makes directory `out` (its parents as needed; `out` itself must not exist) and opens it without
/// following a link: its fd. A name that exists, even an empty directory, is refused.
base::Result<int> makeNewDirectory(const std::string& out) {
    std::error_code ec;
    fs::path parent = fs::path(out).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec) && !fs::create_directories(parent, ec))
        return base::makeError(base::ErrorCode::Io, "cannot create %s: %s", parent.c_str(),
                               ec.message().c_str());
    if (mkdir(out.c_str(), 0700) != 0)
        return errno == EEXIST
                   ? base::makeError(base::ErrorCode::Io,
                                     "%s exists: flatten writes only into a new directory it "
                                     "makes (name one that does not exist)",
                                     out.c_str())
                   : base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create %s",
                                          out.c_str());
    int fd = open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open %s, just made",
                                    out.c_str());
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
        ::close(fd);
        return base::makeError(base::ErrorCode::Io, "%s was replaced as it was made", out.c_str());
    }
    return fd;
}

/// Copies image `name` of `from` to `to`: read as hostile input (a link, a FIFO or a device
/// node is refused, formats/image_open.h), written as a new file of `to` (never through a link).
base::Result<void> copyImage(formats::ImageStore& from, formats::ImageStore& to,
                             const std::string& name) {
    HAL_TRY_ASSIGN(auto reader, from.openRead(name));
    HAL_TRY_ASSIGN(auto writer, to.openWrite(name));
    std::vector<std::byte> block(1 << 20);
    for (uint64_t left = static_cast<uint64_t>(reader->size()); left;) {
        std::span<std::byte> part = std::span(block).first(std::min<uint64_t>(left, block.size()));
        HAL_TRY(reader->readExact(part));
        HAL_TRY(writer->write(part));
        left -= part.size();
    }
    return writer->close();
}

/// `map` as a full dump would have written it: every chunk here, no parent, plain file names.
formats::ChunkMap selfContained(formats::ChunkMap map, const std::vector<ContentsFile>& contents) {
    map.parent.clear();
    map.parentRecord = {};
    for (formats::BoChunks& bo : map.bos) {
        for (formats::ChunkRecord& c : bo.chunks)
            c.place = formats::ChunkPlace::Here;
        for (const ContentsFile& f : contents)
            if (f.chain && f.name == bo.file)
                bo.file = f.plainName;
    }
    return map;
}

} // namespace

int runFlatten(const std::string& dir, const std::string& out) {
    auto checkpoint = readCheckpoint(dir);
    if (!checkpoint)
        return fail(checkpoint.error().describe(), kExitBadInput);
    const Checkpoint& c = *checkpoint;
    for (const std::string& broken : c.brokenChains)
        fprintf(stderr, "criu-amdgpu image flatten: %s\n", printable(broken).c_str());
    if (!c.brokenChains.empty())
        return fail("the chain of " + dir + " is broken: nothing written", kExitProblem);
    if (c.chains.empty())
        return fail(dir + " is not an incremental checkpoint (no image of it names a parent): "
                          "it is self-contained already",
                    kExitBadInput);

    // A new directory this run makes, written only through its fd, every file a new one.
    OutGuard guard{out};
    auto outDir = makeNewDirectory(out);
    if (!outDir)
        return fail(outDir.error().describe(), kExitBadInput);
    guard.made = true;
    auto outStore = formats::openNewFilesStore(*outDir, "new directory " + out);
    ::close(*outDir);
    if (!outStore)
        return fail(outStore.error().describe(), kExitBadInput);

    // Everything but what the chains replace is copied as it is.
    std::set<std::string> replaced;
    for (const auto& [id, chain] : c.chains)
        replaced.insert(formats::chunkMapImageName(id));
    for (const ContentsFile& f : c.contents)
        if (f.chain)
            replaced.insert(f.name);
    size_t copied = 0;
    // Regular files only, never through a link: criu's parent link and anything else that is
    // not a plain file of the checkpoint stay behind.
    auto names = c.store->listDirectory(".");
    if (!names)
        return fail("listing " + dir + ": " + names.error().message(), kExitBadInput);
    for (const std::string& name : *names) {
        if (replaced.count(name))
            continue; // a chain's own files
        if (auto done = copyImage(*c.store, **outStore, name); !done)
            return fail("copying " + name + ": " + done.error().describe(), kExitBadInput);
        ++copied;
    }

    uint64_t bytes = 0;
    size_t assembled = 0;
    for (const ContentsFile& f : c.contents) {
        if (!f.chain)
            continue;
        auto writer = formats::createFramedImage(**outStore, f.plainName, f.bytes);
        if (!writer)
            return fail(writer.error().describe(), kExitBadInput);
        WriterSink sink(**writer);
        if (auto moved = assembleContents(*c.store, f, sink); !moved.ok())
            return fail(f.name + ": " + moved.error().describe(), kExitProblem);
        if (auto closed = (*writer)->close(); !closed.ok())
            return fail(closed.error().describe(), kExitBadInput);
        bytes += f.bytes;
        ++assembled;
    }
    for (const auto& [id, chain] : c.chains) {
        std::string record =
            formats::encodeChunkMap(selfContained(chain->levels().front().map, c.contents));
        auto writer = (*outStore)->openWrite(formats::chunkMapImageName(id));
        if (!writer)
            return fail(writer.error().describe(), kExitBadInput);
        auto wrote = (*writer)->write(std::as_bytes(std::span(record.data(), record.size())));
        if (!wrote.ok() || !(wrote = (*writer)->close()).ok())
            return fail(wrote.error().describe(), kExitBadInput);
    }
    guard.keep = true;
    printf("%s: %zu file(s) copied, %zu BO contents file(s) (%llu bytes) assembled from chains "
           "of up to %zu checkpoints; it needs no parent\n",
           out.c_str(), copied, assembled, static_cast<unsigned long long>(bytes), [&] {
               size_t deepest = 0;
               for (const auto& [id, chain] : c.chains)
                   deepest = std::max(deepest, chain->levels().size());
               return deepest;
           }());
    return 0;
}

} // namespace tools::image
