#include "fake_criu.h"

#include "hal/log.h"

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

} // namespace

FakeCriu& fake() {
    static FakeCriu f;
    return f;
}

frontend::CriuServices fakeServices() {
    frontend::CriuServices s;
    s.printOnLevel = &printOnLevel;
    s.getImageDir = &getImageDir;
    s.addInventoryPlugin = &addInventoryPlugin;
    s.checkAndRemoveInventoryPlugin = &checkAndRemoveInventoryPlugin;
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

void SessionTest::SetUp() {
    fake() = FakeCriu{};
    imageDir_ = tmp_ / "images";
    ASSERT_EQ(mkdir(imageDir_.c_str(), 0700), 0);
    fake().imageDirFd = open(imageDir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fake().imageDirFd, 0);
}

void SessionTest::TearDown() {
    if (fake().imageDirFd >= 0)
        close(fake().imageDirFd);
    fake() = FakeCriu{};
    hal::setLogSink(nullptr);
    hal::setLogThreshold(hal::LogLevel::Warn);
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
    return h;
}

std::string SessionTest::emptyBackendDir() const {
    std::string dir = tmp_ / "backends";
    mkdir(dir.c_str(), 0700);
    return dir;
}

bool SessionTest::imageExists(const std::string& name) const {
    struct stat st;
    return stat((imageDir_ + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace fakecriu
