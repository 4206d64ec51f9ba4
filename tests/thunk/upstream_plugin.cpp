#include "upstream_plugin.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace thunkfake {

namespace {

constexpr uint32_t kFirstFileId = 40;

// criu's plugin ABI (criu/include/criu-plugin.h, /work/shared/docs/criu-plugin-abi.md): the
// descriptor's layout, its stages and the hooks criu 4.1 runs for a GPU process.
enum Stage { kDump = 0, kRestore = 2 };
enum Hook {
    kDumpExtFile = 2,
    kRestoreExtFile = 3,
    kHandleDeviceVma = 7,
    kUpdateVmaMap = 8,
    kResumeDevicesLate = 9,
};
struct PluginDesc {
    const char* name;
    int (*init)(int stage);
    void (*exit)(int stage, int ret);
    unsigned int version;
    unsigned int maxHooks;
    void* hooks[];
};
using DumpExtFile = int (*)(int fd, int id);
using RestoreExtFile = int (*)(int id);
using HandleDeviceVma = int (*)(int fd, const struct stat* st);
using UpdateVmaMap = int (*)(const char* path, uint64_t addr, uint64_t oldPgoff, uint64_t* newPgoff,
                             int* fd);
using ResumeDevicesLate = int (*)(int pid);

/// The plugin loaded into this process (once: its topology and maps are process globals, and
/// each scenario runs in a process of its own), with its criu shims.
struct Loaded {
    void* so = nullptr;
    PluginDesc* desc = nullptr;
    void (*setImageDir)(int) = nullptr;
    void (*setLog)(FILE*, unsigned) = nullptr;
    int (*inventoryCount)() = nullptr;
    int (*addInventory)(const char*) = nullptr;

    template <typename Fn> Fn hook(Hook h) const {
        return h < static_cast<int>(desc->maxHooks) ? reinterpret_cast<Fn>(desc->hooks[h])
                                                    : nullptr;
    }
};

template <typename Fn> void symbol(void* so, const char* name, Fn* out) {
    *out = reinterpret_cast<Fn>(dlsym(so, name));
    ASSERT_NE(*out, nullptr) << "the upstream plugin has no " << name;
}

const Loaded& plugin() {
    static Loaded l;
    if (l.so)
        return l;
    std::string path = upstreamPluginPath();
    // criu: dlopen(RTLD_LAZY), then the data symbol CR_PLUGIN_DESC, its version checked.
    l.so = dlopen(path.c_str(), RTLD_LAZY);
    EXPECT_NE(l.so, nullptr) << dlerror();
    if (!l.so)
        return l;
    l.desc = static_cast<PluginDesc*>(dlsym(l.so, "CR_PLUGIN_DESC"));
    EXPECT_NE(l.desc, nullptr) << path << " has no CR_PLUGIN_DESC";
    if (!l.desc)
        return l;
    EXPECT_STREQ(l.desc->name, "amdgpu_plugin");
    EXPECT_LE(l.desc->version, 0x000200u);
    symbol(l.so, "shim_set_image_dir", &l.setImageDir);
    symbol(l.so, "shim_set_log", &l.setLog);
    symbol(l.so, "shim_inventory_count", &l.inventoryCount);
    symbol(l.so, "add_inventory_plugin", &l.addInventory);
    const char* level = getenv("UPSTREAM_PLUGIN_LOG"); // 4: everything the plugin logs
    if (l.setLog)
        l.setLog(stderr, level ? static_cast<unsigned>(atoi(level)) : 1u);
    return l;
}

/// criu's image directory, opened as criu does for criu_get_image_dir().
int openImageDir(const std::string& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << dir << ": " << strerror(errno);
    return fd;
}

} // namespace

std::string upstreamPluginPath() {
    const char* p = getenv("CRIU_AMDGPU_UPSTREAM_PLUGIN");
    return p ? p : "";
}

void upstreamInventoryAdd(const char* name) {
    const Loaded& l = plugin();
    ASSERT_NE(l.addInventory, nullptr);
    ASSERT_EQ(0, l.addInventory(name));
}

int upstreamInventoryCount() {
    const Loaded& l = plugin();
    return l.inventoryCount ? l.inventoryCount() : -1;
}

void upstreamDumpThisProcess(fakekfd::TestMachine& m, const std::string& imagesDir,
                             DumpedTask* out) {
    const Loaded& l = plugin();
    ASSERT_NE(l.desc, nullptr) << "no upstream plugin at '" << upstreamPluginPath() << "'";
    int pid = getpid();
    fakekfd::FakeKernel& k = *m.kernel;
    std::vector<kfd::ProcFd> fds = deviceFilesInDumpOrder(k, pid);
    out->vmas = mappings();
    int dir = openImageDir(imagesDir);
    l.setImageDir(dir);
    ASSERT_EQ(0, l.desc->init(kDump));
    // criu seizes the task, and its parasite collects the VMAs: each device VMA goes to the
    // plugins (criu passes the stat of the mapped file).
    k.seize(pid);
    auto handleVma = l.hook<HandleDeviceVma>(kHandleDeviceVma);
    ASSERT_NE(handleVma, nullptr);
    for (const FakeMapping& v : out->vmas) {
        struct stat st {};
        ASSERT_EQ(0, k.stat(v.path, &st)) << v.path;
        EXPECT_EQ(0, handleVma(-1, &st)) << v.path << " at " << std::hex << v.addr;
    }
    // Then the files, in fd order, each through criu's own copy of the task's fd.
    auto dumpFile = l.hook<DumpExtFile>(kDumpExtFile);
    ASSERT_NE(dumpFile, nullptr);
    // criu receives the task's fds from its parasite in batches and closes its copies after
    // dumping the batch (the plugin unpauses through the KFD copy at the last render node).
    uint32_t id = kFirstFileId;
    int ret = 0;
    std::vector<int> copies;
    for (const kfd::ProcFd& fd : fds) {
        int copy = k.criuCopyOf(pid, fd.fd);
        ASSERT_GE(copy, 0);
        copies.push_back(copy);
        ret = dumpFile(copy, static_cast<int>(id));
        EXPECT_EQ(0, ret) << "DUMP_EXT_FILE of fd " << fd.fd;
        out->fdOfId[id++] = fd.fd;
    }
    for (int copy : copies)
        k.close(copy);
    l.desc->exit(kDump, ret);
    k.release(pid);
    ::close(dir);
}

void upstreamRestoreThisProcess(fakekfd::TestMachine& m, const std::string& imagesDir,
                                const DumpedTask& task) {
    const Loaded& l = plugin();
    ASSERT_NE(l.desc, nullptr) << "no upstream plugin at '" << upstreamPluginPath() << "'";
    int pid = getpid();
    fakekfd::FakeKernel& k = *m.kernel;
    int dir = openImageDir(imagesDir);
    l.setImageDir(dir);
    ASSERT_EQ(0, l.desc->init(kRestore));
    // Files: criu asks the plugins for each file id of the task's fds and puts the fd it gets
    // at the old number (the plugin wants the KFD file first: the lowest id here).
    auto restoreFile = l.hook<RestoreExtFile>(kRestoreExtFile);
    ASSERT_NE(restoreFile, nullptr);
    int ret = 0;
    for (const auto& [id, oldFd] : task.fdOfId) {
        int fd = restoreFile(static_cast<int>(id));
        ASSERT_GE(fd, 0) << "RESTORE_EXT_FILE of id " << id << " (fd " << oldFd << ")";
        ASSERT_EQ(0, k.taskMoveFd(fd, oldFd)) << "fd " << oldFd << " taken";
    }
    // VMAs: criu asks UPDATE_VMA_MAP for each device VMA; 1 = map at the new offset (from the fd
    // answered, or the VMA's own fd), 0 = as it was.
    auto updateVma = l.hook<UpdateVmaMap>(kUpdateVmaMap);
    ASSERT_NE(updateVma, nullptr);
    for (const FakeMapping& v : task.vmas) {
        uint64_t pgoff = v.offset;
        int fd = -1;
        int r = updateVma(v.path.c_str(), v.addr, v.offset, &pgoff, &fd);
        ASSERT_GE(r, 0) << v.path << " at " << std::hex << v.addr;
        mapAgain(v, fd >= 0 ? fd : v.fd, r == 1 ? pgoff : v.offset);
        if (fd >= 0)
            ::close(fd);
    }
    auto resume = l.hook<ResumeDevicesLate>(kResumeDevicesLate);
    ASSERT_NE(resume, nullptr);
    ret = resume(pid);
    EXPECT_EQ(0, ret) << "RESUME_DEVICES_LATE";
    l.desc->exit(kRestore, ret);
    ::close(dir);
}

} // namespace thunkfake
