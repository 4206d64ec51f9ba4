// `criu-amdgpu image show/verify/check/flatten` on crafted checkpoint directories (a checkpoint
// is untrusted input): nothing outside the directory is read or written, no FIFO is waited on,
// strings from the images never reach the terminal raw, and a budget bounds what is decoded.
#include "image_fixtures.h"
#include "run_tool.h"
#include "temp_dir.h"

#include "formats/chunk_map.h"
#include "formats/image_chain.h"
#include "formats/render_node_image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testsupport::TempDir;
using tooltest::runTool;

const std::string kSecret = "host secret: root:$6$hash";

std::unique_ptr<formats::ImageStore> storeOf(const std::string& dir) {
    fs::create_directories(dir);
    auto store = formats::openDirectoryStore(dir);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return std::move(store).value();
}

/// The chunk record of the fixture's render-node checkpoint (imagetest::writeRenderCheckpoint):
/// its two BOs with contents, every chunk here, naming `parent` (with its checksum) when given.
std::string renderRecord(const std::string& parent, formats::ChunkSum parentSum) {
    formats::ChunkMap map;
    map.parent = parent;
    map.parentRecord = parentSum;
    for (uint32_t i = 0; i < 2; ++i) {
        std::string data = imagetest::bytesOf(4096 << i, static_cast<uint8_t>(9 + i));
        formats::BoChunks bo{
            {imagetest::kGpuB, 0x100000ull * (i + 1), data.size()},
            formats::kMinIncrementChunk,
            {},
            formats::drmPagesImageName(imagetest::kRenderId, imagetest::kRenderMinor, i)};
        for (size_t at = 0; at < data.size(); at += formats::kMinIncrementChunk)
            bo.chunks.push_back({formats::ChunkPlace::Here,
                                 formats::chunkSumOf(std::as_bytes(
                                     std::span(data.data() + at, formats::kMinIncrementChunk)))});
        map.bos.push_back(std::move(bo));
    }
    return formats::encodeChunkMap(map);
}

/// An incremental checkpoint: TMP/d1 (full) and TMP/d2 against it; returns d2.
std::string writeIncremental(const TempDir& tmp) {
    std::string record = formats::chunkMapImageName(imagetest::kRenderId);
    auto d1 = storeOf(tmp / "d1");
    imagetest::writeRenderCheckpoint(*d1);
    std::string first = renderRecord("", {});
    testsupport::writeFile(tmp / "d1/" + record, first);
    auto d2 = storeOf(tmp / "d2");
    imagetest::writeRenderCheckpoint(*d2);
    testsupport::writeFile(
        tmp / "d2/" + record,
        renderRecord("../d1/" + record,
                     formats::chunkSumOf(std::as_bytes(std::span(first.data(), first.size())))));
    return tmp / "d2";
}

TEST(HostileCheckpoint, GivenASymlinkToAHostFileWhenFlattenedThenItsTargetIsNotCopied) {
    TempDir tmp;
    testsupport::writeFile(tmp / "shadow", kSecret);
    std::string dir = writeIncremental(tmp);
    fs::create_symlink(tmp / "shadow", dir + "/core-4242.img");
    auto r = runTool({"image", "flatten", dir, tmp / "out"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_FALSE(fs::exists(fs::symlink_status(tmp / "out/core-4242.img"))) << r.describe();
    for (const auto& [name, bytes] : testsupport::readDirectoryFiles(tmp / "out"))
        EXPECT_THAT(bytes, Not(HasSubstr(kSecret))) << name;
}

TEST(HostileCheckpoint, GivenAFifoAmongCriusFilesWhenFlattenedOrVerifiedThenNothingWaitsOnIt) {
    TempDir tmp;
    std::string dir = writeIncremental(tmp);
    ASSERT_EQ(mkfifo((dir + "/inventory.img").c_str(), 0600), 0);
    auto flat = tooltest::runProgram(tooltest::kTool, {"image", "flatten", dir, tmp / "out"},
                                     tooltest::cleanEnv(), 10);
    EXPECT_FALSE(flat.timedOut) << flat.describe();
    EXPECT_FALSE(fs::exists(tmp / "out/inventory.img")) << flat.describe();
    auto verify =
        tooltest::runProgram(tooltest::kTool, {"image", "verify", dir}, tooltest::cleanEnv(), 10);
    EXPECT_FALSE(verify.timedOut) << verify.describe();
}

TEST(HostileCheckpoint, GivenAChainParentNamingADeviceWhenShownThenItIsRefusedNamingTheRecord) {
    TempDir tmp;
    auto store = storeOf(tmp / "ck");
    imagetest::writeRenderCheckpoint(*store);
    std::string record = formats::chunkMapImageName(imagetest::kRenderId);
    testsupport::writeFile(tmp / "ck/" + record, renderRecord("/dev/zero", {}));
    for (const char* command : {"show", "verify", "check"}) {
        auto r = tooltest::runProgram(tooltest::kTool, {"image", command, tmp / "ck"},
                                      tooltest::cleanEnv(), 20);
        EXPECT_FALSE(r.timedOut) << command << ": " << r.describe();
        EXPECT_THAT(r.out + r.err, HasSubstr(record + ": its parent /dev/zero: an absolute path"))
            << command << ": " << r.describe();
    }
}

TEST(HostileCheckpoint, GivenTerminalEscapesInNamesWhenShownThenTheyArePrintedEscaped) {
    TempDir tmp;
    auto store = storeOf(tmp / "ck");
    imagetest::writeRenderCheckpoint(*store);
    // A leftover file whose name clears the screen, and a parent path that sets the title.
    testsupport::writeFile(tmp / "ck/amdgpu-\x1b[2J\x1b]0;owned\x07.img", "");
    std::string record = formats::chunkMapImageName(imagetest::kRenderId);
    testsupport::writeFile(tmp / "ck/" + record, renderRecord("../x\x1b[31m/" + record, {}));
    auto text = runTool({"image", "show", tmp / "ck"});
    EXPECT_THAT(text.out, Not(HasSubstr("\x1b"))) << text.describe();
    EXPECT_THAT(text.out, Not(HasSubstr("\x07"))) << text.describe();
    EXPECT_THAT(text.out, HasSubstr("amdgpu-\\x1b[2J\\x1b]0;owned\\x07.img")) << text.describe();
    EXPECT_THAT(text.out, HasSubstr("x\\x1b[31m")) << text.describe();
    auto json = runTool({"image", "show", "--json", tmp / "ck"});
    EXPECT_THAT(json.out, Not(HasSubstr("\x1b"))) << json.describe();
    EXPECT_THAT(json.out, HasSubstr("\\u001b[2J")) << json.describe();
}

TEST(HostileCheckpoint, GivenTerminalEscapesInNamesWhenVerifiedOrCheckedThenNoOutputHoldsThemRaw) {
    TempDir tmp;
    auto store = storeOf(tmp / "ck");
    imagetest::writeRenderCheckpoint(*store);
    std::string record = formats::chunkMapImageName(imagetest::kRenderId);
    testsupport::writeFile(tmp / "ck/" + record, renderRecord("../x\x1b[31m\x07/" + record, {}));
    for (const char* command : {"verify", "check"}) {
        auto r = runTool({"image", command, tmp / "ck"});
        std::string both = r.out + r.err;
        EXPECT_THAT(both, Not(HasSubstr("\x1b"))) << command << ": " << r.describe();
        EXPECT_THAT(both, Not(HasSubstr("\x07"))) << command << ": " << r.describe();
        EXPECT_THAT(both, HasSubstr("x\\x1b[31m\\x07")) << command << ": " << r.describe();
    }
    auto flat = runTool({"image", "flatten", tmp / "ck", tmp / "out"});
    EXPECT_NE(flat.exitCode, 0) << flat.describe();
    EXPECT_THAT(flat.err, Not(HasSubstr("\x1b"))) << flat.describe();
    EXPECT_THAT(flat.err, HasSubstr("x\\x1b[31m\\x07")) << flat.describe();
}

TEST(HostileCheckpoint, GivenAnOutputDirectoryThatExistsWhenFlattenedThenItIsRefusedUntouched) {
    TempDir tmp;
    std::string dir = writeIncremental(tmp);
    fs::create_directories(tmp / "empty");
    auto r = runTool({"image", "flatten", dir, tmp / "empty"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(tmp / "empty" + " exists: flatten writes only into a new "
                                                 "directory it makes"));
    EXPECT_TRUE(fs::is_empty(tmp / "empty"));
    EXPECT_TRUE(fs::exists(tmp / "empty")) << "a directory it did not make was removed";
}

TEST(HostileCheckpoint, GivenAnOutputNameLinkedToADirectoryWhenFlattenedThenNothingIsWrittenThere) {
    TempDir tmp;
    std::string dir = writeIncremental(tmp);
    fs::create_directories(tmp / "victim");
    fs::create_directory_symlink(tmp / "victim", tmp / "out");
    auto r = runTool({"image", "flatten", dir, tmp / "out"});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(tmp / "out" + " exists"));
    EXPECT_TRUE(fs::is_empty(tmp / "victim"));
}

TEST(HostileCheckpoint, GivenANewOutputDirectoryWhenFlattenedThenItIsMadeAndSelfContained) {
    TempDir tmp;
    std::string dir = writeIncremental(tmp);
    auto r = runTool({"image", "flatten", dir, tmp / "new/out"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("it needs no parent"));
    EXPECT_FALSE(testsupport::readDirectoryFiles(tmp / "new/out").empty());
}

TEST(HostileCheckpoint, GivenMetadataImagesBeyondTheBudgetWhenShownThenTheRestIsNotDecoded) {
    TempDir tmp;
    auto store = storeOf(tmp / "ck");
    imagetest::writeRenderCheckpoint(*store);
    // Six sparse render-node images of 60 MiB each: 360 MiB that a tarball carries in bytes.
    for (uint32_t id = 100; id < 106; ++id) {
        std::string path = tmp / "ck/" + formats::renderNodeImageName(id);
        testsupport::writeFile(path, "");
        ASSERT_EQ(truncate(path.c_str(), 60ll << 20), 0);
    }
    auto r = runTool({"image", "show", tmp / "ck"});
    EXPECT_THAT(r.out, HasSubstr("cannot decode amdgpu-renderD-105.img: not decoded: the "
                                 "checkpoint's metadata images exceed the 256 MiB"))
        << r.describe();
}

} // namespace
