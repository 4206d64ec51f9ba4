// The files and directories the configuration names hold what criu, as root, runs with (issue 34,
// item 5): config, options-file, backend-dir, mock-root and kfd-driver are refused, naming the
// option, the path and why, unless root (or the caller) owns them and no one else may write them or
// a directory above them.
#include "config/config.h"
#include "open_watch.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

using testing::HasSubstr;

namespace config {
namespace {

namespace fs = std::filesystem;

class TrustedSources : public testing::Test {
protected:
    TrustedSources() {
        sources_.env = std::map<std::string, std::string>{};
        sources_.defaultYamlPath = dir_ / "amdgpu.yaml";
        sources_.defaultOptionsPath = dir_ / "amdgpu.conf";
    }

    /// A file holding `text`, readable by all, writable by its owner only.
    std::string file(const std::string& name, const std::string& text) {
        std::string path = dir_ / name;
        testsupport::writeFile(path, text);
        chmod(path.c_str(), 0644);
        return path;
    }
    /// A directory writable by its owner only.
    std::string directory(const std::string& name) {
        std::string path = dir_ / name;
        fs::create_directories(path);
        chmod(path.c_str(), 0755);
        return path;
    }
    void setEnv(const char* name, const std::string& value) { (*sources_.env)[name] = value; }

    std::string loadError() {
        auto r = loadConfig(sources_);
        if (r.ok())
            return "loaded";
        EXPECT_EQ(r.error().code(), base::ErrorCode::Config);
        return r.error().describe();
    }
    bool loads() {
        auto r = loadConfig(sources_);
        EXPECT_TRUE(r.ok()) << r.error().describe();
        return r.ok();
    }

    testsupport::TempDir dir_;
    Sources sources_;
};

TEST_F(TrustedSources, GivenFilesAndDirectoriesOnlyTheirOwnerWrites_ThenAllAreUsed) {
    std::string options = file("opts.conf", "plugin-opt amdgpu:numa-check=0\n");
    setEnv("CRIU_AMDGPU_CONFIG", file("named.yaml", "options_file: " + options + "\n"));
    setEnv("CRIU_AMDGPU_BACKEND_DIR", directory("backends"));
    setEnv("CRIU_AMDGPU_MOCK_ROOT", directory("machine"));

    auto r = loadConfig(sources_);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_FALSE(r->settings.checks.numa);
    EXPECT_EQ(r->settings.backendDir, dir_ / "backends");
}

TEST_F(TrustedSources, GivenAConfigFileOwnedByNobody_ThenItIsRefusedUnread) {
    if (geteuid() != 0)
        GTEST_SKIP() << "only root can give a file to uid 65534";
    std::string yaml = file("named.yaml", "numa_check: false\n");
    ASSERT_EQ(chown(yaml.c_str(), 65534, 65534), 0);
    setEnv("CRIU_AMDGPU_CONFIG", yaml);

    std::string error = loadError();
    EXPECT_THAT(error, HasSubstr("config '" + yaml + "' is owned by uid 65534"));
    EXPECT_THAT(error, HasSubstr("named by env CRIU_AMDGPU_CONFIG"));
}

TEST_F(TrustedSources, GivenAWorldWritableDefaultConfigFile_ThenItIsRefused) {
    file("amdgpu.yaml", "numa_check: false\n");
    chmod(sources_.defaultYamlPath.c_str(), 0666);

    EXPECT_THAT(loadError(), HasSubstr("config '" + sources_.defaultYamlPath +
                                       "' is writable by group or others (mode 0666)"));
}

TEST_F(TrustedSources, GivenAGroupWritableOptionsFile_ThenItIsRefused) {
    std::string options = file("opts.conf", "plugin-opt amdgpu:numa-check=0\n");
    chmod(options.c_str(), 0664);
    sources_.pluginOptions = {"amdgpu.options-file=" + options};

    EXPECT_THAT(loadError(), HasSubstr("options-file '" + options +
                                       "' is writable by group or others (mode 0664)"));
}

TEST_F(TrustedSources, GivenAnOptionsFileInAWorldWritableDirectory_ThenItIsRefusedNamingIt) {
    std::string open = directory("open");
    std::string options = file("open/opts.conf", "plugin-opt amdgpu:numa-check=0\n");
    chmod(open.c_str(), 0777);
    setEnv("CRIU_AMDGPU_OPTIONS_FILE", options);

    EXPECT_THAT(loadError(),
                HasSubstr("its directory '" + open + "' is writable by group or others"));
}

TEST_F(TrustedSources, GivenAWorldWritableBackendDir_ThenItIsRefusedNamingWhoSetIt) {
    std::string backends = directory("backends");
    chmod(backends.c_str(), 0777);
    setEnv("CRIU_AMDGPU_BACKEND_DIR", backends);

    std::string error = loadError();
    EXPECT_THAT(error, HasSubstr("backend-dir '" + backends +
                                 "' is writable by group or others (mode 0777)"));
    EXPECT_THAT(error, HasSubstr("backend-dir is set by env CRIU_AMDGPU_BACKEND_DIR"));
}

TEST_F(TrustedSources, GivenAMockRootOwnedByNobody_ThenItIsRefused) {
    if (geteuid() != 0)
        GTEST_SKIP() << "only root can give a directory to uid 65534";
    std::string machine = directory("machine");
    ASSERT_EQ(chown(machine.c_str(), 65534, 65534), 0);
    sources_.pluginOptions = {"amdgpu.mock-root=" + machine};

    std::string error = loadError();
    EXPECT_THAT(error, HasSubstr("mock-root '" + machine + "' is owned by uid 65534"));
    EXPECT_THAT(error, HasSubstr("plugin option"));
}

TEST_F(TrustedSources, GivenAWorldWritableKfdDriverRoot_ThenItIsRefusedNamingWhoSetIt) {
    std::string machine = directory("kfd-machine");
    chmod(machine.c_str(), 0777);
    setEnv("CRIU_AMDGPU_KFD_DRIVER", machine);

    std::string error = loadError();
    EXPECT_THAT(error, HasSubstr("kfd-driver '" + machine +
                                 "' is writable by group or others (mode 0777)"));
    EXPECT_THAT(error, HasSubstr("kfd-driver is set by env CRIU_AMDGPU_KFD_DRIVER"));
}

TEST_F(TrustedSources, GivenABackendDirThatDoesNotExist_ThenItIsNotRefused) {
    // Nothing there to load: the registry finds no backends and says so.
    setEnv("CRIU_AMDGPU_BACKEND_DIR", dir_ / "none");
    EXPECT_TRUE(loads());
}

TEST_F(TrustedSources, GivenAnOptionsFileNamedThroughALinkInAWorldWritableDirectory_ThenRefused) {
    // The link points at a file only its owner writes, but anyone may replace the link.
    std::string options = file("opts.conf", "plugin-opt amdgpu:numa-check=0\n");
    std::string open = directory("open");
    chmod(open.c_str(), 0777);
    std::string link = open + "/opts.conf";
    ASSERT_EQ(symlink(options.c_str(), link.c_str()), 0);
    setEnv("CRIU_AMDGPU_OPTIONS_FILE", link);

    EXPECT_THAT(loadError(), HasSubstr("options-file '" + link + "': its directory '" + open +
                                       "' is writable by group or others (mode 0777)"));
}

TEST_F(TrustedSources, GivenAFifoAsTheConfigFile_ThenItIsRefusedWithoutBeingOpened) {
    std::string fifo = dir_ / "named.yaml";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    setEnv("CRIU_AMDGPU_CONFIG", fifo);
    testsupport::OpenWatch watch(dir_.path());

    EXPECT_THAT(loadError(),
                HasSubstr("config '" + fifo + "' is not a regular file (it is a FIFO)"));
    EXPECT_FALSE(watch.opened("named.yaml"));
}

TEST_F(TrustedSources, GivenADeviceNodeAsTheOptionsFile_ThenItsDriverIsNeverOpened) {
    if (geteuid() != 0)
        GTEST_SKIP() << "making a device node needs root";
    std::string zero = dir_ / "zero.conf";
    ASSERT_EQ(mknod(zero.c_str(), S_IFCHR | 0644, makedev(1, 5)), 0); // /dev/zero's numbers
    sources_.pluginOptions = {"amdgpu.options-file=" + zero};
    testsupport::OpenWatch watch(dir_.path());

    EXPECT_THAT(loadError(), HasSubstr("options-file '" + zero +
                                       "' is not a regular file (it is a character device)"));
    EXPECT_FALSE(watch.opened("zero.conf"));
}

} // namespace
} // namespace config
