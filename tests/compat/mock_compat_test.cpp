// The mock backend's checkpoints read by the reference tool built from upstream's schema: the
// render-node layout of CRIU's development branch (BO list and one framed file per BO).
#include "upstream_tool.h"

#include "mock_fixture.h"

#include "mockgpu/client.h"

#include "formats/render_node_image.h"
#include "hal/registry.h"
#include "settings/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

using compat::runUpstream;
using mocktest::fileRefOf;
using ::testing::HasSubstr;

namespace {

TEST(MockCompat, OurDumpIsWhatUpstreamsPluginReads) {
    mocktest::MockMachine machine(2);
    settings::Settings settings;
    settings.mockRoot = machine.root();
    hal::BackendRegistry registry;
    registry.discover(CRIU_AMDGPU_BUILD_BACKEND_DIR, settings, hal::HostServices{});
    auto chosen = registry.select(settings);
    ASSERT_TRUE(chosen.ok()) << chosen.error().describe();
    std::string images = machine.dir() / "images", expect = machine.dir() / "expect";
    std::filesystem::create_directories(images);
    std::filesystem::create_directories(expect);
    auto store = formats::openDirectoryStore(images).value();

    std::vector<int> fds;
    for (unsigned gpu = 0; gpu < 2; ++gpu) {
        auto fd = mock::openDevice(machine.root(), gpu);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
        fds.push_back(fd.value());
        for (uint32_t k = 0; k < 2; ++k) {
            auto bo = mock::allocBo(fd.value(), (48 << 10) + k * 4096, k + 1, 0x100000 * (k + 1));
            ASSERT_TRUE(bo.ok()) << bo.error().describe();
            ASSERT_TRUE(mock::writeBo(fd.value(), bo.value(), 0,
                                      mocktest::pattern((48 << 10) + k * 4096, gpu * 2 + k + 1))
                            .ok());
        }
    }
    auto dev = chosen.value()->backend->createDevice(hal::DeviceEnv{&settings, store.get()});
    ASSERT_TRUE(dev.ok()) << dev.error().describe();
    ASSERT_TRUE((*dev)->pauseProcess(getpid()).value());
    ASSERT_TRUE((*dev)->checkpointProcess(getpid()).ok());
    for (unsigned i = 0; i < 2; ++i) {
        auto r = (*dev)->dumpFile(fileRefOf(fds[i], 20 + i));
        ASSERT_TRUE(r.ok()) << r.error().describe();
    }
    ASSERT_TRUE((*dev)->finishDump(true).ok());
    for (unsigned i = 0; i < 2; ++i) {
        auto image = formats::readRenderNodeImage(*store, 20 + i);
        ASSERT_TRUE(image.ok()) << image.error().describe();
        for (size_t b = 0; b < image->bos.size(); ++b) {
            std::vector<std::byte> bytes(image->bos[b].size);
            ASSERT_TRUE(mock::readBo(fds[i], image->bos[b].handle, 0, bytes).ok());
            compat::writeBytes(expect, base::strFormat("drm-%u-bo-%zu.bin", 20 + i, b),
                               bytes.data(), bytes.size());
        }
    }
    for (int fd : fds)
        close(fd);

    bool bos = compat::upstreamSchema().renderBos;
    compat::ToolRun run = runUpstream({"check", images, "--expect", expect, "--min-render", "2",
                                       "--min-drm-pages", bos ? "4" : "0"});
    EXPECT_EQ(run.status, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr(bos ? "2 render-node images, 4 render-node BO files"
                                          : "2 render-node images"));
}

} // namespace
