// amdgpu_plugin.so, the C library criu loads: it needs no C++ runtime, it loads the C++ core only
// where a criu run could involve an AMD GPU (criu_amdgpu_core_needed), and then the core fills
// criu's descriptor. The built libraries are loaded here as criu loads them (dlopen).

#include "plugin_abi_c.h"

#include "config/config.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

using testsupport::writeFile;

class CoreNeeded : public ::testing::Test {
protected:
    void SetUp() override {
        procDevices_ = tmp_ / "devices";
        writeFile(procDevices_, "Character devices:\n  1 mem\n 10 misc\n\nBlock devices:\n"
                                "  7 loop\n226 drm-lookalike-block\n");
        images_ = tmp_ / "images";
        ASSERT_EQ(mkdir(images_.c_str(), 0700), 0);
        writeFile(images_ + "/inventory.img", "x");
        configFiles_ = {(tmp_ / "amdgpu.yaml"), (tmp_ / "amdgpu.conf")};
    }
    void TearDown() override {
        if (imageFd_ >= 0)
            close(imageFd_);
    }

    /// Decides with the test's files, `env` and `options`; returns the answer and sets why_.
    bool needed(std::vector<std::string> env = {}, std::vector<std::string> options = {}) {
        std::vector<char*> envp, argv;
        for (std::string& e : env)
            envp.push_back(e.data());
        envp.push_back(nullptr);
        for (std::string& o : options)
            argv.push_back(o.data());
        const char* files[] = {configFiles_[0].c_str(), configFiles_[1].c_str(), nullptr};
        if (imageFd_ < 0)
            imageFd_ = open(images_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CriuAmdgpuRunFacts facts = {
            procDevices_.c_str(),          files,      envp.data(), imageFd_,
            static_cast<int>(argv.size()), argv.data()};
        char why[512];
        int r = criu_amdgpu_core_needed(&facts, why, sizeof(why));
        why_ = why;
        return r == 1;
    }

    testsupport::TempDir tmp_;
    std::string procDevices_, images_;
    std::vector<std::string> configFiles_;
    int imageFd_ = -1;
    std::string why_;
};

TEST_F(CoreNeeded, GivenNothingOfAnAmdGpu_ThenNotNeededAndSaysWhy) {
    EXPECT_FALSE(needed({"PATH=/usr/bin", "HOME=/root", "CRIU_FAULT=130"},
                        {"criu-plugin", "--cuda_plugin.timeout=3"}));
    EXPECT_NE(why_.find("no kfd or drm driver"), std::string::npos) << why_;
}

TEST_F(CoreNeeded, GivenAKfdOrDrmDriver_ThenNeeded) {
    writeFile(procDevices_, "Character devices:\n  1 mem\n238 kfd\n\nBlock devices:\n");
    EXPECT_TRUE(needed());
    EXPECT_NE(why_.find("kfd driver"), std::string::npos) << why_;
    writeFile(procDevices_, "Character devices:\n226 drm\n");
    EXPECT_TRUE(needed());
}

TEST_F(CoreNeeded, GivenAVariableOfThePlugin_ThenNeededAndNamesIt) {
    EXPECT_TRUE(needed({"PATH=/usr/bin", "CRIU_AMDGPU_MOCK_ROOT=/tmp/m"}));
    EXPECT_EQ(why_, "the environment sets CRIU_AMDGPU_MOCK_ROOT");
    EXPECT_TRUE(needed({"KFD_NUMA_CHECK=0"})) << "the legacy KFD_* names are the plugin's too";
}

TEST_F(CoreNeeded, GivenAnAmdgpuPluginOption_ThenNeeded) {
    EXPECT_TRUE(needed({}, {"criu-plugin", "--cuda_plugin.timeout=3", "--amdgpu.numa-check=0"}));
    EXPECT_EQ(why_, "plugin option --amdgpu.numa-check=0");
    EXPECT_TRUE(needed({}, {"criu-plugin", "--amdgpu_plugin.backend=kfd"}));
    EXPECT_FALSE(needed({}, {"criu-plugin", "--amdgpuX.a=1", "--amdgpu", "amdgpu-foo.x"}));
}

TEST_F(CoreNeeded, GivenAConfigurationFile_ThenNeeded) {
    writeFile(configFiles_[1], "");
    EXPECT_TRUE(needed());
    EXPECT_EQ(why_, configFiles_[1] + " exists");
}

TEST_F(CoreNeeded, GivenAmdgpuImages_ThenNeeded) {
    writeFile(images_ + "/amdgpu-renderD-7.img", "x");
    EXPECT_TRUE(needed());
    EXPECT_EQ(why_, "the image directory holds amdgpu-renderD-7.img");
}

TEST_F(CoreNeeded, GivenNoImageDirectoryAndNoProcDevices_ThenNotNeeded) {
    procDevices_ = tmp_ / "no-such-file";
    imageFd_ = -2; // not -1: keeps needed() from opening the directory
    EXPECT_FALSE(needed());
}

// The shim's list of configuration files is the configuration's own defaults.
TEST(ShimConfigFiles, AreTheConfigurationDefaults) {
    config::Sources defaults;
    std::string shim = "/etc/criu/amdgpu.yaml /etc/criu/amdgpu.conf";
    EXPECT_EQ(defaults.defaultYamlPath + " " + defaults.defaultOptionsPath, shim)
        << "plugin_shim.c must list the files config::Sources reads by default";
}

// ------------------------------------------------------------------- the libraries as built

std::string pluginPath() {
    return std::string(CRIU_AMDGPU_BUILD_PLUGIN_DIR) + "/amdgpu_plugin.so";
}

/// The DT_NEEDED entries of a loaded library.
std::vector<std::string> neededLibraries(void* handle) {
    std::vector<std::string> out;
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return out;
    const char* strtab = nullptr;
    for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d)
        if (d->d_tag == DT_STRTAB)
            strtab = reinterpret_cast<const char*>(d->d_un.d_ptr);
    for (const ElfW(Dyn)* d = map->l_ld; strtab && d->d_tag != DT_NULL; ++d)
        if (d->d_tag == DT_NEEDED)
            out.emplace_back(strtab + d->d_un.d_val);
    return out;
}

TEST(Shim, NeedsNoCppRuntime) {
    void* shim = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(shim, nullptr) << dlerror();
    std::vector<std::string> needed = neededLibraries(shim);
    EXPECT_FALSE(needed.empty());
    for (const std::string& lib : needed) {
#ifdef CRIU_AMDGPU_SANITIZED
        if (lib.rfind("libclang_rt.", 0) == 0 || lib.rfind("libgcc_s.so", 0) == 0)
            continue;
#endif
        EXPECT_EQ(lib.find("libc.so"), 0u) << "amdgpu_plugin.so needs " << lib;
    }
    dlclose(shim);
}

TEST(Core, LiesWhereTheShimLooksForIt) {
    std::string core = std::string(CRIU_AMDGPU_BUILD_PLUGIN_DIR) + "/" + CRIU_AMDGPU_CORE_PATH;
    void* handle = dlopen(core.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    EXPECT_NE(dlsym(handle, CRIU_AMDGPU_CORE_DESCRIBE), nullptr);
    dlclose(handle);
}

/// In a child process with CRIU_AMDGPU_LOG_LEVEL set: loads amdgpu_plugin.so and exits with the
/// max_hooks of its descriptor (100 when it could not be loaded).
int maxHooksWithAPluginVariable() {
    pid_t child = fork();
    if (child == 0) {
        setenv("CRIU_AMDGPU_LOG_LEVEL", "debug", 1);
        void* shim = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
        auto* desc = shim ? static_cast<CriuPluginDesc*>(dlsym(shim, "CR_PLUGIN_DESC")) : nullptr;
        _exit(desc ? static_cast<int>(desc->max_hooks) : 100);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The variable makes the core needed; the core, in a process that is not criu, describes the
// 3.17 ABI (10 hooks). The inert shim would declare none.
TEST(Shim, GivenAVariableOfThePlugin_WhenLoaded_ThenTheCoreFillsTheDescriptor) {
    EXPECT_EQ(maxHooksWithAPluginVariable(), 10);
}

/// Whether a library whose path ends in `suffix` is loaded in this process. A library the plugin
/// loaded through the fd it judged is named "/proc/self/fd/N": the file that fd is open on.
bool isLoaded(const std::string& suffix) {
    struct Search {
        const std::string* suffix;
        bool found;
    } search{&suffix, false};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            std::string name = info->dlpi_name ? info->dlpi_name : "";
            if (name.rfind("/proc/self/fd/", 0) == 0) {
                char target[4096];
                ssize_t n = readlink(name.c_str(), target, sizeof target - 1);
                name.assign(target, n > 0 ? static_cast<size_t>(n) : 0);
            }
            if (name.size() >= s->suffix->size() &&
                name.compare(name.size() - s->suffix->size(), s->suffix->size(), *s->suffix) == 0)
                s->found = true;
            return 0;
        },
        &search);
    return search.found;
}

/// What initWithYaml saw.
struct YamlInit {
    bool moduleLoaded = false; ///< amdgpu_yaml.so was loaded once init had run
    std::string log;           ///< what the plugin wrote on stderr
};

/// In a child process with CRIU_AMDGPU_CONFIG=`yaml` (none when empty): loads amdgpu_plugin.so
/// and runs its init for a dump (a configuration error is logged; init itself succeeds).
YamlInit initWithYaml(const std::string& yaml) {
    testsupport::TempDir tmp;
    std::string logPath = tmp / "stderr";
    pid_t child = fork();
    if (child == 0) {
        int log = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (log < 0 || dup2(log, 2) < 0)
            _exit(100);
        setenv("CRIU_AMDGPU_LOG_LEVEL", "debug", 1);
        if (!yaml.empty())
            setenv("CRIU_AMDGPU_CONFIG", yaml.c_str(), 1);
        void* shim = dlopen(pluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
        auto* desc = shim ? static_cast<CriuPluginDesc*>(dlsym(shim, "CR_PLUGIN_DESC")) : nullptr;
        if (!desc || !desc->init || desc->init(0) != 0)
            _exit(100);
        _exit(isLoaded("/amdgpu_yaml.so") ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    YamlInit out;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) <= 1) << "status " << status;
    out.moduleLoaded = WIFEXITED(status) && WEXITSTATUS(status) == 1;
    out.log = testsupport::readFile(logPath);
    return out;
}

// yaml-cpp and the iostreams it starts cost criu about 0.9 MiB: the core loads them (through
// amdgpu_yaml.so) only to read a YAML file, and then reads it.
TEST(Core, GivenNoYamlFile_WhenInitRuns_ThenTheYamlModuleIsNotLoaded) {
    EXPECT_FALSE(initWithYaml("").moduleLoaded);
}

TEST(Core, GivenAYamlFile_WhenInitRuns_ThenItIsReadThroughTheYamlModule) {
    testsupport::TempDir tmp;
    writeFile(tmp / "good.yaml", "numa_check: false\n");
    YamlInit good = initWithYaml(tmp / "good.yaml");
    EXPECT_TRUE(good.moduleLoaded);
    EXPECT_EQ(good.log.find("configuration error"), std::string::npos) << good.log;
    writeFile(tmp / "bad.yaml", "numa_check: false\nno_such_key: 1\n");
    YamlInit bad = initWithYaml(tmp / "bad.yaml");
    EXPECT_TRUE(bad.moduleLoaded);
    EXPECT_NE(bad.log.find("bad.yaml:2: unknown key 'no_such_key'"), std::string::npos) << bad.log;
}

} // namespace
