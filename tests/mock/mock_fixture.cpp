#include "mock_fixture.h"

#include "mockgpu/client.h"
#include "mockgpu/machine.h"

#include "topology/render_node_access.h"
#include "topology/sysfs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

namespace mocktest {

MockMachine::MockMachine(unsigned gpus, uint64_t vramBytes) {
    topology::SyntheticSpec spec;
    spec.gpus = gpus;
    spec.vramBytes = vramBytes;
    init(spec);
}

MockMachine::MockMachine(const topology::SyntheticSpec& spec) {
    init(spec);
}

void MockMachine::init(const topology::SyntheticSpec& spec) {
    std::string topoDir = dir_ / "topology-src";
    auto written = topology::writeKfdTopology(topology::makeSyntheticTopology(spec), topoDir);
    if (!written.ok()) {
        ADD_FAILURE() << written.error().describe();
        return;
    }
    root_ = mock::canonicalRoot(dir_ / "machine");
    auto made = mock::initMachine(root_, topoDir);
    if (!made.ok())
        ADD_FAILURE() << made.error().describe();
}

void MockMachine::setBudget(uint64_t bytes) const {
    auto cfg = mock::readMachineConfig(root_);
    if (!cfg.ok()) {
        ADD_FAILURE() << cfg.error().describe();
        return;
    }
    testsupport::writeFile(root_ + "/machine.conf",
                           "device_major " + std::to_string(major(cfg->deviceRdev)) +
                               "\ndevice_minor " + std::to_string(minor(cfg->deviceRdev)) +
                               "\nbudget_bytes " + std::to_string(bytes) + "\n");
}

Fd::~Fd() {
    if (fd >= 0)
        close(fd);
}

std::vector<std::byte> readAll(int fd, uint32_t bo, size_t n) {
    std::vector<std::byte> out(n);
    auto r = mock::readBo(fd, bo, 0, out);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    return out;
}

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
    std::vector<std::byte> out(n);
    for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::byte>((i * 31 + seed * 7 + (i >> 8)) & 0xff);
    return out;
}

hal::FileRef fileRefOf(int fd, uint32_t id) {
    hal::FileRef ref;
    ref.fd = fd;
    ref.id = id;
    EXPECT_EQ(fstat(fd, &ref.st), 0);
    std::error_code ec;
    ref.path = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
    return ref;
}

DeviceView::DeviceView(const MockMachine& m, const std::vector<unsigned>& gpus, bool withKfd) {
    static int views = 0;
    dir_ = m.dir() / ("view-" + std::to_string(views++));
    std::filesystem::create_directories(dir_ + "/dri");
    auto cfg = mock::readMachineConfig(m.root());
    if (!cfg.ok()) {
        ADD_FAILURE() << cfg.error().describe();
        return;
    }
    rdev_ = cfg->deviceRdev;
    if (withKfd)
        add("kfd");
    for (unsigned g : gpus)
        add("dri/renderD" + std::to_string(renderMinorOf(m, g)));
}

void DeviceView::add(const std::string& name) const {
    // kfd carries the mock's number, a render node its real one (226:minor), as mock init makes.
    static const std::string kRender = "dri/renderD";
    dev_t rdev = name.rfind(kRender, 0) == 0
                     ? topology::renderNodeRdev(std::stoi(name.substr(kRender.size())))
                     : rdev_;
    EXPECT_EQ(0, mknod((dir_ + "/" + name).c_str(), S_IFCHR | 0600, rdev)) << name;
}

void DeviceView::remove(const std::string& name) const {
    EXPECT_TRUE(std::filesystem::remove(dir_ + "/" + name)) << name;
}

int DeviceCgroup::statPath(const std::string& path, struct stat* st) {
    return topology::systemDeviceNodeCalls().statPath(path, st);
}

int DeviceCgroup::openNode(const std::string& path) {
    struct stat st;
    if (statPath(path, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 226 &&
        denied_.count(static_cast<int>(minor(st.st_rdev))))
        return -EPERM;
    return topology::systemDeviceNodeCalls().openNode(path);
}

void DeviceCgroup::closeNode(int fd) {
    topology::systemDeviceNodeCalls().closeNode(fd);
}

int DeviceCgroup::makeCharNode(const std::string& path, mode_t mode, dev_t rdev, uid_t uid,
                               gid_t gid) {
    return topology::systemDeviceNodeCalls().makeCharNode(path, mode, rdev, uid, gid);
}

int DeviceCgroup::unlinkPath(const std::string& path) {
    return topology::systemDeviceNodeCalls().unlinkPath(path);
}

int DeviceCgroup::makeDir(const std::string& path, mode_t mode) {
    return topology::systemDeviceNodeCalls().makeDir(path, mode);
}

int renderMinorOf(const MockMachine& m, unsigned gpu) {
    auto topo = mock::readMachineTopology(m.root());
    EXPECT_TRUE(topo.ok()) << topo.error().describe();
    return topo.ok() ? topo->gpus().at(gpu)->renderMinor() : -1;
}

size_t contextCount(const std::string& root) {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(root + "/state/contexts", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        if (it->is_directory())
            ++n;
    return n;
}

} // namespace mocktest
