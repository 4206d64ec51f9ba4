// A checkpoint directory as hostile input (formats/image_open.h): links, FIFOs, device nodes and
// paths out of the directory are refused naming the file, in bounded time and memory; chain
// parents are checked before anything is opened; metadata is decoded within its caps.
#include "formats/image_chain.h"
#include "formats/image_open.h"
#include "formats/image_store.h"
#include "formats/proto_image.h"

#include "bounded_child.h"
#include "page_cache.h"
#include "temp_dir.h"

#include "criu-amdgpu.pb-c.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testsupport::TempDir;

const std::string kRecord = formats::chunkMapImageName(1);

std::unique_ptr<formats::ImageStore> storeOf(const std::string& dir) {
    auto store = formats::openDirectoryStore(dir);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return std::move(store).value();
}

/// What opening `name` in `dir` says, from a child that may not hang or run out of memory.
std::string openingSays(const std::string& dir, const std::string& name) {
    return testsupport::runBounded([&]() -> std::string {
        auto reader = storeOf(dir)->openRead(name);
        if (reader.ok())
            return "opened";
        return reader.error().message();
    });
}

/// A chunk record of one BO whose chunks are all in the parent `parent`.
std::string recordNaming(const std::string& parent) {
    formats::ChunkMap map;
    map.parent = parent;
    formats::BoChunks bo{{0x1234, 0x7000, 4096}, 4096, {}, "amdgpu-drm-pages-1-128-0.img"};
    bo.chunks.push_back({formats::ChunkPlace::InParent, {}});
    map.bos.push_back(bo);
    return formats::encodeChunkMap(map);
}

/// What loading the chain of `dir`'s record says, from a bounded child.
std::string chainSays(const std::string& dir) {
    return testsupport::runBounded([&]() -> std::string {
        auto chain = formats::loadChain(*storeOf(dir), kRecord);
        if (chain.ok())
            return "loaded " + std::to_string(chain->size());
        return chain.error().message();
    });
}

/// Opening image `name` of `dir` is refused, naming it and saying it is `what`.
void expectRefusedAs(const std::string& dir, const std::string& name, const std::string& what) {
    std::string says = openingSays(dir, name);
    EXPECT_THAT(says, HasSubstr(name + ": it is " + what));
}

TEST(HostileImages, GivenAnImageThatIsASymlinkToAHostFileWhenOpenedThenItIsRefusedNamingIt) {
    TempDir tmp;
    testsupport::writeFile(tmp / "secret", "host secret");
    fs::create_directories(tmp / "ck");
    fs::create_symlink(tmp / "secret", tmp / "ck/amdgpu-pages-1-1000.img");
    expectRefusedAs(tmp / "ck", "amdgpu-pages-1-1000.img", "a symbolic link");
}

TEST(HostileImages, GivenAnImageThatIsAFifoWhenOpenedThenItIsRefusedWithoutWaiting) {
    TempDir tmp;
    fs::create_directories(tmp / "ck");
    ASSERT_EQ(mkfifo((tmp / "ck/amdgpu-kfd-1.img").c_str(), 0600), 0);
    expectRefusedAs(tmp / "ck", "amdgpu-kfd-1.img", "a FIFO");
}

TEST(HostileImages, GivenAnImageThatIsADeviceNodeWhenOpenedThenItIsRefusedUnopened) {
    TempDir tmp;
    fs::create_directories(tmp / "ck");
    // The tests run as root (scripts/as-root.sh): /dev/null's number.
    ASSERT_EQ(mknod((tmp / "ck/amdgpu-renderD-1.img").c_str(), S_IFCHR | 0600, makedev(1, 3)), 0)
        << strerror(errno);
    expectRefusedAs(tmp / "ck", "amdgpu-renderD-1.img", "a character device");
}

TEST(HostileImages, GivenNamesOutOfTheDirectoryWhenOpenedThenOnlyThoseBesideItAreRead) {
    TempDir tmp;
    testsupport::writeFile(tmp / "ck/d1/a.img", "sibling");
    testsupport::writeFile(tmp / "ck/d2/x", "");
    EXPECT_EQ(openingSays(tmp / "ck/d2", "../d1/a.img"), "opened");
    EXPECT_THAT(openingSays(tmp / "ck/d2", "../../ck/d1/a.img"),
                HasSubstr("climbs out of the image directory's parent"));
    EXPECT_THAT(openingSays(tmp / "ck/d2", tmp / "ck/d1/a.img"), HasSubstr("an absolute path"));
    // A directory link that stays beside the image directory is followed (criu's `parent`).
    fs::create_directory_symlink("../d1", tmp / "ck/d2/parent");
    EXPECT_EQ(openingSays(tmp / "ck/d2", "parent/a.img"), "opened");
    // One that leads higher, or to an absolute path, is not.
    fs::create_directory_symlink("../..", tmp / "ck/d2/up");
    EXPECT_THAT(openingSays(tmp / "ck/d2", "up/ck/d1/a.img"), HasSubstr("leads out"));
    fs::create_directory_symlink(tmp / "ck/d1", tmp / "ck/d2/abs");
    EXPECT_THAT(openingSays(tmp / "ck/d2", "abs/a.img"), HasSubstr("a link to the absolute path"));
}

// Fetching an image ahead opens it as reading it does: a link to a host file, or a name that
// climbs out of the directory's parent, fetches nothing of the file it leads to, and a FIFO is
// not waited on.
TEST(HostileImages, GivenHostileNamesWhenFetchedAheadThenNothingOutsideIsFetchedAndNothingWaits) {
    constexpr uint64_t kSecret = 4 << 20;
    TempDir tmp = testsupport::pageCacheDir();
    std::string secret = tmp / "secret";
    ASSERT_TRUE(testsupport::writeUncached(secret, kSecret));
    ASSERT_LT(testsupport::cachedBytes(secret, kSecret), kSecret / 2)
        << tmp.path() << " keeps its files' pages: nothing here can show what is fetched";
    fs::create_directories(tmp / "a/ck");
    fs::create_symlink(secret, tmp / "a/ck/amdgpu-pages-1-1000.img");
    ASSERT_EQ(mkfifo((tmp / "a/ck/amdgpu-kfd-1.img").c_str(), 0600), 0);
    std::string said = testsupport::runBounded([&]() -> std::string {
        auto store = storeOf(tmp / "a/ck");
        for (const std::string& name :
             {std::string("amdgpu-pages-1-1000.img"), std::string("../../secret"), secret,
              std::string("amdgpu-kfd-1.img"), std::string("missing.img")})
            store->readAhead(name, kSecret);
        return "returned";
    });
    EXPECT_EQ(said, "returned");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_LT(testsupport::cachedBytes(secret, kSecret), kSecret / 2);
}

TEST(HostileImages, GivenADirectoryLinkLoopWhenOpenedThenItIsRefused) {
    TempDir tmp;
    fs::create_directories(tmp / "ck");
    fs::create_directory_symlink("b", tmp / "ck/a");
    fs::create_directory_symlink("a", tmp / "ck/b");
    EXPECT_THAT(openingSays(tmp / "ck", "a/x.img"), HasSubstr("more than 40 symbolic links"));
}

TEST(HostileImages, GivenAListedDirectoryWhenListedThenLinksToFilesAreNotListed) {
    TempDir tmp;
    testsupport::writeFile(tmp / "secret", "x");
    testsupport::writeFile(tmp / "ck/amdgpu-chunks-1.img", "x");
    fs::create_symlink(tmp / "secret", tmp / "ck/amdgpu-chunks-2.img");
    auto names = storeOf(tmp / "ck")->listDirectory(".");
    ASSERT_TRUE(names.ok()) << names.error().message();
    EXPECT_EQ(*names, std::vector<std::string>{"amdgpu-chunks-1.img"});
}

TEST(HostileImages, GivenAChainParentThatIsAnAbsoluteFifoWhenLoadedThenItIsRefusedUnopened) {
    TempDir tmp;
    ASSERT_EQ(mkfifo((tmp / "fifo").c_str(), 0600), 0);
    testsupport::writeFile(tmp / "ck" + "/" + kRecord, recordNaming(tmp / "fifo"));
    std::string says = chainSays(tmp / "ck");
    EXPECT_THAT(says, HasSubstr(kRecord + ": its parent"));
    EXPECT_THAT(says, HasSubstr("an absolute path"));
}

TEST(HostileImages, GivenAChainParentThatClimbsOutWhenLoadedThenItIsRefusedUnopened) {
    TempDir tmp;
    testsupport::writeFile(tmp / "ck/d1/" + kRecord, recordNaming("../../d0/" + kRecord));
    std::string says = chainSays(tmp / "ck/d1");
    EXPECT_THAT(says, HasSubstr("climbs out of the image directory's parent"));
}

TEST(HostileImages, GivenAChainThroughCriusParentLinkWhenLoadedThenItIsFollowed) {
    TempDir tmp;
    formats::ChunkMap oldest;
    oldest.bos.push_back({{0x1234, 0x7000, 4096},
                          4096,
                          {{formats::ChunkPlace::Here, {}}},
                          "amdgpu-drm-pages-1-128-0.img"});
    std::string bytes = formats::encodeChunkMap(oldest);
    testsupport::writeFile(tmp / "d1/" + kRecord, bytes);
    formats::ChunkMap child = oldest;
    child.parent = "parent/" + kRecord;
    child.parentRecord = formats::chunkSumOf(std::as_bytes(std::span(bytes.data(), bytes.size())));
    child.bos[0].chunks[0].place = formats::ChunkPlace::InParent;
    testsupport::writeFile(tmp / "d2/" + kRecord, formats::encodeChunkMap(child));
    fs::create_directory_symlink("../d1", tmp / "d2/parent");
    EXPECT_EQ(chainSays(tmp / "d2"), "loaded 2");
}

TEST(HostileImages, GivenAChainThatComesBackToItselfWhenLoadedThenTheLoopIsNamedAtOnce) {
    TempDir tmp;
    testsupport::writeFile(tmp / "ck/" + kRecord, recordNaming("./" + kRecord));
    EXPECT_THAT(chainSays(tmp / "ck"), HasSubstr("already in its chain (a loop)"));
}

TEST(HostileImages, GivenAHugeSparseChunkRecordWhenLoadedThenItIsRefusedByItsSize) {
    TempDir tmp;
    testsupport::writeFile(tmp / "ck/" + kRecord, "");
    ASSERT_EQ(truncate((tmp / "ck/" + kRecord).c_str(), 512ll << 20), 0);
    std::string says = chainSays(tmp / "ck");
    EXPECT_THAT(says, HasSubstr(kRecord));
    EXPECT_THAT(says, HasSubstr("at most 16 MiB"));
}

TEST(HostileImages, GivenASharedBudgetWhenChainsReadMoreThanItThenTheNextIsRefused) {
    TempDir tmp;
    formats::ChunkMap map;
    map.bos.push_back({{1, 0, 4096}, 4096, {{formats::ChunkPlace::Here, {}}}, "a.img"});
    std::string bytes = formats::encodeChunkMap(map);
    testsupport::writeFile(tmp / "ck/" + kRecord, bytes);
    auto store = storeOf(tmp / "ck");
    formats::ChainBudget budget(bytes.size() * 2);
    EXPECT_TRUE(formats::loadChain(*store, kRecord, &budget).ok());
    EXPECT_TRUE(formats::loadChain(*store, kRecord, &budget).ok());
    auto third = formats::loadChain(*store, kRecord, &budget);
    ASSERT_FALSE(third.ok());
    EXPECT_THAT(third.error().message(), HasSubstr("may read in all"));
}

// image flatten's output: only new files, never through a link planted at a name.
TEST(HostileImages, GivenANewFilesStoreWhenANameExistsThenWritingItIsRefusedAndItsTargetUntouched) {
    TempDir tmp;
    testsupport::writeFile(tmp / "host-file", "host contents");
    fs::create_directories(tmp / "out");
    fs::create_symlink(tmp / "host-file", tmp / "out/linked.img");
    testsupport::writeFile(tmp / "out/there.img", "there");
    int dir = open((tmp / "out").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    auto store = formats::openNewFilesStore(dir, "directory out");
    close(dir);
    ASSERT_TRUE(store.ok()) << store.error().message();
    for (const char* name : {"linked.img", "there.img"}) {
        auto writer = (*store)->openWrite(name);
        ASSERT_FALSE(writer.ok()) << name;
        EXPECT_THAT(writer.error().message(),
                    HasSubstr(std::string(name) + " in directory out: it exists"));
    }
    EXPECT_EQ(testsupport::readFile(tmp / "host-file"), "host contents");
    EXPECT_EQ(testsupport::readFile(tmp / "out/there.img"), "there");
    auto fresh = (*store)->openWrite("new.img");
    ASSERT_TRUE(fresh.ok()) << fresh.error().message();
    ASSERT_TRUE((*fresh)->write(std::as_bytes(std::span("new", 3))).ok());
    ASSERT_TRUE((*fresh)->close().ok());
    EXPECT_EQ(testsupport::readFile(tmp / "out/new.img"), "new");
}

TEST(HostileImages, GivenAPayloadOfEmptyMessagesWhenUnpackedThenItStopsAtItsMemoryCap) {
    // 2 bytes a BO entry packed (field 5, length 0), a struct of its own unpacked: 48 MiB of
    // them would take GiBs.
    std::string says = testsupport::runBounded([]() -> std::string {
        std::string payload;
        for (size_t i = 0; i < (24u << 20); ++i)
            payload.append("\x2a\x00", 2);
        auto msg = formats::unpackProtoRaw(payload, &criu_render_node__descriptor, "image x.img");
        if (msg.ok()) {
            formats::ProtoFree()(*msg);
            return "unpacked";
        }
        return msg.error().message();
    });
    EXPECT_THAT(says, HasSubstr("x.img"));
    EXPECT_THAT(says, HasSubstr("would unpack into more than the 256 MiB"));
}

} // namespace
