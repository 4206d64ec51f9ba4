#include "fake_criu.h"

#include "mockgpu/client.h"
#include "mockgpu/machine.h"

#include "base/log.h"
#include "topology/synth.h"
#include "topology/sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace fakecriu {
namespace {

void printOnLevel(unsigned level, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    char buf[8192];
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    fake().logs.push_back(LogRecord{level, buf});
}

int getImageDir() {
    return fake().imageDirFd;
}

int addInventoryPlugin(const char* name) {
    fake().added.emplace_back(name ? name : "(null)");
    return 0;
}

bool checkAndRemoveInventoryPlugin(const char* name, size_t len) {
    fake().checked.emplace_back(name ? std::string(name, len) : "(null)");
    return fake().inventoryListsPlugin;
}

int getPluginOptions(int* argc, char*** argv) {
    static std::vector<char*> pointers;
    pointers.clear();
    for (std::string& arg : fake().pluginArgv)
        pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    *argc = static_cast<int>(pointers.size() - 1);
    *argv = pointers.data();
    return 0;
}

} // namespace

FakeCriu& fake() {
    static FakeCriu f;
    return f;
}

int fdstoreAdd(int fd) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return -1;
    fake().fdstore.push_back(copy);
    return static_cast<int>(fake().fdstore.size() - 1);
}

int fdstoreGet(int id) {
    if (id < 0 || static_cast<size_t>(id) >= fake().fdstore.size())
        return -1;
    return fcntl(fake().fdstore[static_cast<size_t>(id)], F_DUPFD_CLOEXEC, 0);
}

int findUnusedFdPid(int pid) {
    fake().unusedFdAskedFor.push_back(pid);
    return fake().unusedFd;
}

frontend::CriuServices fakeServices() {
    frontend::CriuServices s;
    s.printOnLevel = &printOnLevel;
    s.getImageDir = &getImageDir;
    s.addInventoryPlugin = &addInventoryPlugin;
    s.checkAndRemoveInventoryPlugin = &checkAndRemoveInventoryPlugin;
    s.getPluginOptions = &getPluginOptions;
    s.options = &fake().finalState;
    s.fdstoreAdd = &fdstoreAdd;
    s.fdstoreGet = &fdstoreGet;
    s.findUnusedFdPid = &findUnusedFdPid;
    return s;
}

std::string logsAtOrAbove(unsigned level) {
    std::string out;
    for (const LogRecord& r : fake().logs)
        if (r.level <= level)
            out += r.text;
    return out;
}

frontend::CriuAbi abi41() {
    frontend::CriuAbi abi;
    abi.release = "4.1";
    abi.maxHooks = 12;
    abi.inventory = true;
    abi.how = "test";
    return abi;
}

frontend::CriuAbi abi317() {
    frontend::CriuAbi abi;
    abi.release = "3.17";
    abi.maxHooks = 10;
    abi.how = "test";
    return abi;
}

frontend::CriuAbi abi43() {
    frontend::CriuAbi abi;
    abi.release = "4.3";
    abi.maxHooks = 17;
    abi.retryNeeded = true;
    abi.inventory = true;
    abi.pluginOptions = true;
    abi.how = "test";
    return abi;
}

void SessionTest::SetUp() {
    fake() = FakeCriu{};
    imageDir_ = tmp_ / "images";
    ASSERT_EQ(mkdir(imageDir_.c_str(), 0700), 0);
    fake().imageDirFd = open(imageDir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fake().imageDirFd, 0);
    procDevices_ = tmp_ / "proc-devices";
    setProcDevices("Character devices:\n  1 mem\n 10 misc\n\nBlock devices:\n  7 loop\n");
}

void SessionTest::setProcDevices(const std::string& text) const {
    testsupport::writeFile(procDevices_, text);
}

void SessionTest::TearDown() {
    for (int fd : {devNull_, regular_})
        if (fd >= 0)
            close(fd);
    if (fake().imageDirFd >= 0)
        close(fake().imageDirFd);
    for (int fd : fake().fdstore)
        close(fd);
    fake() = FakeCriu{};
    base::setLogSink(nullptr);
    base::setLogThreshold(base::LogLevel::Warn);
}

frontend::PluginSession::Host SessionTest::host(std::map<std::string, std::string> env,
                                                frontend::CriuAbi abi) const {
    frontend::PluginSession::Host h;
    h.services = fakeServices();
    h.abi = std::move(abi);
    h.pluginDir = tmp_ / "plugin-dir-without-backends";
    h.sources.env = std::move(env);
    h.sources.defaultYamlPath = tmp_ / "no-such-amdgpu.yaml";
    h.sources.defaultOptionsPath = tmp_ / "no-such-amdgpu.conf";
    h.devicePaths.procDevices = procDevices_;
    return h;
}

std::string SessionTest::emptyBackendDir() const {
    std::string dir = tmp_ / "backends";
    mkdir(dir.c_str(), 0700);
    return dir;
}

std::string SessionTest::makeMockMachine() {
    std::string root = tmp_ / "machine";
    std::string topology = tmp_ / "topology";
    auto written = topology::writeKfdTopology(
        topology::makeSyntheticTopology(topology::SyntheticSpec{}), topology);
    EXPECT_TRUE(written.ok()) << written.error().describe();
    auto machine = mock::initMachine(root, topology);
    EXPECT_TRUE(machine.ok()) << machine.error().describe();
    return root;
}

void SessionTest::openMockGpuWithBo(const std::string& root, const std::vector<std::byte>& bytes,
                                    int* fd, uint32_t* bo) {
    auto opened = mock::openDevice(root, 0);
    ASSERT_TRUE(opened.ok()) << opened.error().describe();
    *fd = opened.value();
    auto made = mock::allocBo(*fd, bytes.size(), 1, 0x100000);
    ASSERT_TRUE(made.ok()) << made.error().describe();
    *bo = made.value();
    auto written = mock::writeBo(*fd, *bo, 0, bytes);
    ASSERT_TRUE(written.ok()) << written.error().describe();
}

void SessionTest::openPlainFiles() {
    devNull_ = open("/dev/null", O_RDWR | O_CLOEXEC);
    ASSERT_GE(devNull_, 0);
    std::string file = tmp_ / "regular";
    regular_ = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(regular_, 0);
}

bool SessionTest::imageExists(const std::string& name) const {
    struct stat st;
    return stat((imageDir_ + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace fakecriu
