// PluginSession at restore: criu's inventory (4.1+) says whether the dump used this plugin. When it
// did not, the session stays inert whatever backend is around; when it did and no backend can
// restore here, the restore of the first AMD GPU file fails and says why.

#include "fake_criu.h"
#include "formats/image_store.h"
#include "formats/render_node_image.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace {

using fakecriu::fake;

class RestoreSession : public fakecriu::SessionTest {
protected:
    void TearDown() override {
        session_.exit(frontend::kStageRestore, 0);
        SessionTest::TearDown();
    }

    /// The environment of a machine where the mock backend is present.
    std::map<std::string, std::string> mockEnv() {
        return {{"CRIU_AMDGPU_MOCK_ROOT", makeMockMachine()},
                {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}};
    }

    frontend::PluginSession session_;
};

TEST_F(RestoreSession, GivenInventoryWithoutPlugin_WhenInitRestore_ThenZeroAndInertDespiteBackend) {
    fake().inventoryListsPlugin = false;
    EXPECT_EQ(session_.init(frontend::kStageRestore, host(mockEnv(), fakecriu::abi41())), 0)
        << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(session_.active());
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(RestoreSession, GivenInventoryAbi_WhenInitRestore_ThenAsksCriuAboutAmdgpuPlugin) {
    fake().inventoryListsPlugin = false;
    session_.init(frontend::kStageRestore, host(mockEnv(), fakecriu::abi41()));
    EXPECT_EQ(fake().checked, std::vector<std::string>{"amdgpu_plugin"});
}

TEST_F(RestoreSession, GivenInventoryWithoutPlugin_WhenRestoreHooksRun_ThenEachAnswersENOTSUP) {
    fake().inventoryListsPlugin = false;
    ASSERT_EQ(session_.init(frontend::kStageRestore, host(mockEnv(), fakecriu::abi41())), 0);
    for (int id : {0, 7, 4096})
        EXPECT_EQ(session_.restoreExtFile(id), -ENOTSUP) << "id " << id;
    uint64_t newPgoff = 5;
    int pluginFd = 6;
    EXPECT_EQ(session_.updateVmaMap("/dev/dri/renderD128", 0x1000, 0, &newPgoff, &pluginFd),
              -ENOTSUP);
    struct stat st = {};
    EXPECT_EQ(session_.handleDeviceVma(0, &st), -ENOTSUP);
    EXPECT_EQ(session_.resumeDevicesLate(getpid()), -ENOTSUP);
    EXPECT_EQ(session_.postForking(), -ENOTSUP);
    EXPECT_EQ(session_.restoreInit(), -ENOTSUP);
    EXPECT_EQ(newPgoff, 5u);
    EXPECT_EQ(pluginFd, 6);
}

// The inventory also says "yes" for images of criu before 4.1, which have no plugin list, so
// init cannot fail on it: the restore fails where a file of the checkpoint is an AMD GPU's.
TEST_F(RestoreSession, GivenInventoryListsPluginAndNoBackend_WhenInitRestore_ThenZeroAndInert) {
    fake().inventoryListsPlugin = true;
    EXPECT_EQ(
        session_.init(frontend::kStageRestore,
                      host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi41())),
        0);
    EXPECT_FALSE(session_.active());
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(RestoreSession,
       GivenInventoryListsPluginAndNoBackend_WhenRestoringAFileWithOurImage_ThenErrorSaysWhy) {
    fake().inventoryListsPlugin = true;
    setProcDevices("Character devices:\n226 drm\n"); // a GPU driver: the backends are looked for
    std::string dir = emptyBackendDir();
    ASSERT_EQ(session_.init(frontend::kStageRestore,
                            host({{"CRIU_AMDGPU_BACKEND_DIR", dir}}, fakecriu::abi41())),
              0);
    testsupport::writeFile(imageDir_ + "/amdgpu-renderD-4.img", "x");
    EXPECT_EQ(session_.restoreExtFile(4), -ENODEV);
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_NE(errors.find("this checkpoint used AMD GPUs, but none can be used here"),
              std::string::npos)
        << errors;
    EXPECT_NE(errors.find("no backend libraries in " + dir), std::string::npos) << errors;
    EXPECT_EQ(session_.restoreExtFile(5), -ENOTSUP);
}

// A render node's refusal names the node and GPU of its image: what the machine or container
// restored into was not given (a device view of fewer render nodes, scenario_kfd_driver_render.sh).
TEST_F(RestoreSession,
       GivenNoBackendAndARenderNodeImage_WhenRestoringThatFile_ThenTheErrorNamesItsRenderNode) {
    fake().inventoryListsPlugin = true;
    setProcDevices("Character devices:\n226 drm\n");
    ASSERT_EQ(
        session_.init(frontend::kStageRestore,
                      host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi41())),
        0);
    auto store = formats::openDirectoryStore(imageDir_);
    ASSERT_TRUE(store.ok()) << store.error().describe();
    formats::RenderNodeImage image;
    image.id = 16;
    image.gpuId = 0x99ff;
    image.renderMinor = 129;
    ASSERT_TRUE(formats::writeRenderNodeImage(**store, image).ok());
    EXPECT_EQ(session_.restoreExtFile(16), -ENODEV);
    std::string errors = fakecriu::logsAtOrAbove(1);
    EXPECT_NE(errors.find("file id 16 was an AMD GPU device (renderD129 of GPU 0x99ff), and no "
                          "backend can serve it here"),
              std::string::npos)
        << errors;
}

TEST_F(RestoreSession, GivenInventoryListsPluginAndMockBackend_WhenInitRestore_ThenZeroAndActive) {
    fake().inventoryListsPlugin = true;
    EXPECT_EQ(session_.init(frontend::kStageRestore, host(mockEnv(), fakecriu::abi41())), 0)
        << fakecriu::logsAtOrAbove(4);
    EXPECT_TRUE(session_.active());
    EXPECT_EQ(session_.backendName(), "mock");
}

// Without check_and_remove_inventory_plugin criu cannot say whether the dump used the plugin
// (criu before 4.1, or an ABI forced beyond what criu exports): as before 4.1, no backend means an
// inert session, not a failed restore.
TEST_F(RestoreSession,
       GivenInventoryAbiButNoCheckFunctionAndNoBackend_WhenInitRestore_ThenZeroAndInert) {
    frontend::PluginSession::Host h =
        host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi41());
    h.services.checkAndRemoveInventoryPlugin = nullptr;
    h.services.addInventoryPlugin = nullptr;
    EXPECT_EQ(session_.init(frontend::kStageRestore, std::move(h)), 0)
        << fakecriu::logsAtOrAbove(4);
    EXPECT_FALSE(session_.active());
    EXPECT_EQ(fakecriu::logsAtOrAbove(2), "");
}

TEST_F(RestoreSession, GivenCriu3AndNoBackend_WhenInitRestore_ThenZeroAndInert) {
    EXPECT_EQ(
        session_.init(frontend::kStageRestore,
                      host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi317())),
        0);
    EXPECT_FALSE(session_.active());
    EXPECT_TRUE(fake().checked.empty());
}

TEST_F(RestoreSession,
       GivenInertRestoreAndImageOfThisFileId_WhenRestoreExtFile_ThenENODEVAndError) {
    ASSERT_EQ(
        session_.init(frontend::kStageRestore,
                      host({{"CRIU_AMDGPU_BACKEND_DIR", emptyBackendDir()}}, fakecriu::abi317())),
        0);
    testsupport::writeFile(imageDir_ + "/amdgpu-renderD-9.img", "x");
    EXPECT_EQ(session_.restoreExtFile(9), -ENODEV);
    EXPECT_NE(fakecriu::logsAtOrAbove(1).find("file id 9"), std::string::npos);
    EXPECT_EQ(session_.restoreExtFile(10), -ENOTSUP);
}

} // namespace
