// criu-amdgpu image verify on checkpoints that are not whole: no image at all, criu's images
// without the plugin's, a dump that stopped before criu wrote inventory.img, a render-node image
// or a pages file removed or cut. criu's own images are written as criu frames them
// (criu_images/criu_image_write.h); that the field numbers are criu's is checked against real
// criu in tests/e2e/scenario_image_inspect.sh.
#include "image_fixtures.h"
#include "run_tool.h"
#include "temp_dir.h"

#include "criu_images/criu_facts.h"
#include "criu_images/criu_image_write.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace {

using criu_images::FileRecord;
using criu_images::kFdTypeExt;
using nlohmann::json;
using testing::HasSubstr;
using testing::Not;
using tooltest::RunResult;
using tooltest::runTool;
using namespace imagetest;

constexpr uint32_t kRegular = 1; // criu's fd_types REG

/// A checkpoint directory: criu's images (inventory.img, files.img, a core image) and, unless
/// told otherwise, the plugin's: a KFD process and a render node with a dma-buf, all sound.
class DumpCompleteness : public ::testing::Test {
protected:
    void SetUp() override {
        auto store = formats::openDirectoryStore(dir_.path());
        ASSERT_TRUE(store.ok());
        writeKfdCheckpoint(**store);
        writeRenderCheckpoint(**store);
    }

    /// criu's images as a dump that finished writes them; `plugins` is the inventory's list.
    void writeCriuImages(const std::optional<std::vector<std::string>>& plugins,
                         std::vector<FileRecord> files = {{kRegular, 1},
                                                          {kFdTypeExt, kKfdId},
                                                          {kFdTypeExt, kRenderId},
                                                          {kFdTypeExt, kDmabufId}}) {
        testsupport::writeFile(dir_ / "inventory.img", criu_images::inventoryImage(plugins));
        testsupport::writeFile(dir_ / "files.img", criu_images::filesImage(files));
        // core-1.img stands for the rest of criu's images: its magic words only.
        testsupport::writeFile(dir_ / "core-1.img",
                               criu_images::frameImage(criu_images::kCommonMagic, 0x55053847, {}));
    }

    void removeAmdgpuImages() {
        for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
            if (e.path().filename().string().rfind("amdgpu-", 0) == 0)
                std::filesystem::remove(e.path());
    }

    RunResult verify(bool json = false) {
        if (json)
            return runTool({"image", "verify", "--json", dir_.path()});
        return runTool({"image", "verify", dir_.path()});
    }

    testsupport::TempDir dir_;
    std::vector<std::string> amdgpu_ = {"amdgpu_plugin"};
};

TEST_F(DumpCompleteness, AWholeDumpIsSoundAndSaysWhatWasChecked) {
    writeCriuImages(amdgpu_);
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("note: checked against criu's inventory.img: the dump finished, "
                                 "plugins: amdgpu_plugin"));
    EXPECT_THAT(r.out, HasSubstr("note: checked against criu's files.img: 3 external file(s): "
                                 "5, 7, 9"));
    EXPECT_THAT(r.out, HasSubstr("4 contents file(s) checked (4 with a recorded checksum): "
                                 "all sound"));
}

TEST(DumpCompletenessEmpty, AnEmptyDirectorySaysNoImageOfEitherKind) {
    testsupport::TempDir dir;
    RunResult r = runTool({"image", "verify", dir.path()});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("no amdgpu image in " + dir.path() + ": no criu image either"));
    EXPECT_THAT(r.out, Not(HasSubstr("all sound")));
    r = runTool({"image", "verify", "--json", dir.path()});
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    json j = json::parse(r.out);
    EXPECT_EQ(j["dir"], dir.path());
    EXPECT_EQ(j["verdict"], "no amdgpu image");
    EXPECT_EQ(j["amdgpu_images"], 0);
    EXPECT_EQ(j["criu_images"], json::array());
    EXPECT_THAT(j["reason"].get<std::string>(), HasSubstr("not a checkpoint's image directory"));
}

TEST_F(DumpCompleteness, OnlyCriusImagesOfADumpWithoutTheGpuSayTheDumpUsedNone) {
    removeAmdgpuImages();
    writeCriuImages(std::vector<std::string>{}, {{kRegular, 1}});
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("no amdgpu image in " + dir_.path() +
                                 ": criu's images are here, and inventory.img lists no "
                                 "amdgpu_plugin (plugins: none)"));
    r = verify(true);
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "no amdgpu image");
    EXPECT_EQ(j["criu_images"], (json{"core-1.img", "files.img", "inventory.img"}));
}

TEST_F(DumpCompleteness, CriusImagesWithThePluginsRemovedAreDamaged) {
    removeAmdgpuImages();
    writeCriuImages(amdgpu_);
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("inventory.img: lists amdgpu_plugin among the plugins the dump "
                                 "used, but there is no amdgpu image"));
    EXPECT_THAT(r.out, HasSubstr("amdgpu-kfd-7.img, amdgpu-renderD-7.img or amdgpu-dmabuf_7.img: "
                                 "missing: files.img lists external file 7"));
    EXPECT_THAT(r.out, HasSubstr("0 contents file(s) checked (0 with a recorded checksum): the "
                                 "checkpoint is damaged"));
    r = verify(true);
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "damaged");
    ASSERT_EQ(j["problems"].size(), 4u) << r.out; // the inventory, three external files
    EXPECT_EQ(j["problems"][0]["file"], "inventory.img");
    EXPECT_EQ(j["problems"][0]["offset"], -1);
}

TEST_F(DumpCompleteness, ARemovedRenderNodeImageIsNamed) {
    writeCriuImages(amdgpu_);
    std::filesystem::remove(dir_ / formats::renderNodeImageName(kRenderId));
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("amdgpu-renderD-7.img or amdgpu-dmabuf_7.img: missing: files.img "
                                 "lists external file 7"));
    EXPECT_THAT(r.out, HasSubstr("the checkpoint is damaged"));
}

TEST_F(DumpCompleteness, ACutPagesFileIsNamedWithWhereItEnds) {
    writeCriuImages(amdgpu_);
    std::string pages = formats::kfdPagesImageName(kKfdId, kGpuB);
    std::filesystem::resize_file(dir_ / pages, 1000);
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr(pages + ": at offset 1000: the file ends here"));
}

TEST_F(DumpCompleteness, ARemovedPagesFileIsNamed) {
    writeCriuImages(amdgpu_);
    std::string pages = formats::kfdPagesImageName(kKfdId, kGpuA);
    std::filesystem::remove(dir_ / pages);
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr(pages + ": missing (amdgpu-kfd-5.img calls for it)"));
}

TEST_F(DumpCompleteness, ADumpThatStoppedBeforeTheInventoryIsDamaged) {
    writeCriuImages(amdgpu_);
    std::filesystem::remove(dir_ / "inventory.img");
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("inventory.img: missing, but criu's other images are here "
                                 "(core-1.img, files.img): criu writes inventory.img last"));
    // ... with no amdgpu image either, it is damaged all the same, not "no amdgpu image".
    removeAmdgpuImages();
    r = verify(true);
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_EQ(json::parse(r.out)["verdict"], "damaged");
}

TEST_F(DumpCompleteness, ADumpWhoseCriuWasKilledLeavesEmptyImagesAndIsDamaged) {
    // criu buffers each image and writes it when done with it: killed mid-dump, it leaves the
    // plugin's images beside empty files of its own.
    for (const char* name : {"files.img", "fdinfo-2.img", "ids-1.img"})
        testsupport::writeFile(dir_ / name, "");
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("fdinfo-2.img, files.img, ids-1.img: empty: criu opened these "
                                 "images and never wrote them"));
    // ... and so it is with criu's finished images beside one it never wrote.
    std::filesystem::remove(dir_ / "fdinfo-2.img");
    std::filesystem::remove(dir_ / "ids-1.img");
    writeCriuImages(amdgpu_);
    testsupport::writeFile(dir_ / "files.img", "");
    r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("files.img: empty: criu opened"));
}

TEST_F(DumpCompleteness, AnInventoryWithoutThePluginCannotRestoreItsImages) {
    writeCriuImages(std::vector<std::string>{"cuda_plugin"});
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("inventory.img: does not list amdgpu_plugin (it lists "
                                 "cuda_plugin), yet 4 amdgpu image(s) are here"));
}

TEST_F(DumpCompleteness, AnotherPluginsExternalFileIsANoteNotAProblem) {
    writeCriuImages(
        std::vector<std::string>{"amdgpu_plugin", "other_plugin"},
        {{kFdTypeExt, kKfdId}, {kFdTypeExt, kRenderId}, {kFdTypeExt, kDmabufId}, {kFdTypeExt, 12}});
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("note: files.img lists external file(s) 12 without an amdgpu "
                                 "image; inventory.img also lists amdgpu_plugin, other_plugin"));
}

TEST_F(DumpCompleteness, WithoutAPluginListTheAmdgpuImagesBesideSayTheFilesAreOurs) {
    writeCriuImages(std::nullopt); // criu before 4.1
    std::filesystem::remove(dir_ / formats::kfdImageName(kKfdId));
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("note: inventory.img has no plugin list"));
    EXPECT_THAT(r.out, HasSubstr("amdgpu-kfd-5.img, amdgpu-renderD-5.img or amdgpu-dmabuf_5.img: "
                                 "missing"));
}

TEST_F(DumpCompleteness, WithoutAPluginListOrAmdgpuImagesTheFilesMayBeAnotherPlugins) {
    removeAmdgpuImages();
    writeCriuImages(std::nullopt);
    RunResult r = verify(true);
    EXPECT_EQ(r.exitCode, 1) << r.describe();
    json j = json::parse(r.out);
    EXPECT_EQ(j["verdict"], "no amdgpu image");
    EXPECT_THAT(j["notes"].dump(), HasSubstr("5, 7, 9 and none has an amdgpu image"));
    EXPECT_THAT(j["reason"].get<std::string>(), HasSubstr("no plugin list"));
}

TEST_F(DumpCompleteness, ACutFilesImageIsNamedWithItsOffset) {
    writeCriuImages(amdgpu_);
    std::string files = criu_images::filesImage({{kRegular, 1}, {kFdTypeExt, kKfdId}});
    testsupport::writeFile(dir_ / "files.img", files.substr(0, files.size() - 2));
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("files.img: cannot be decoded: at offset"));
    EXPECT_THAT(r.out, HasSubstr("the file is cut"));
}

TEST_F(DumpCompleteness, ExtFilesImageOfOlderCriuIsRead) {
    writeCriuImages(amdgpu_, {});
    std::filesystem::remove(dir_ / "files.img");
    testsupport::writeFile(dir_ / "ext-files.img",
                           criu_images::extFilesImage({kKfdId, kRenderId, kDmabufId, 3}));
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("amdgpu-dmabuf_3.img: missing: ext-files.img lists external "
                                 "file 3"));
}

TEST_F(DumpCompleteness, AnImageCriuNeverAsksForIsANote) {
    writeCriuImages(amdgpu_, {{kFdTypeExt, kKfdId}, {kFdTypeExt, kRenderId}});
    RunResult r = verify();
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("note: files.img has no external file 9: criu's restore will not "
                                 "ask for its amdgpu image"));
}

} // namespace
