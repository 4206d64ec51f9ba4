#include "mockgpu/machine.h"

#include "mockgpu/context.h"
#include "mockgpu/criu_ops.h"
#include "mockgpu/device_nodes.h"
#include "mockgpu/files.h"

#include "topology/sysfs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

namespace mock {
namespace {

/// Character devices whose fds criu hands to plugins (running-criu.md) and that are harmless to
/// open: the mock nodes carry the numbers of the first one present.
const char* const kCandidateDevices[] = {"/dev/cpu_dma_latency", "/dev/kvm", "/dev/hwrng",
                                         "/dev/btrfs-control", "/dev/loop-control"};

base::Result<dev_t> pickDevice(const std::string& requested) {
    auto numbersOf = [](const std::string& path) -> base::Result<dev_t> {
        struct stat st;
        if (stat(path.c_str(), &st) != 0)
            return base::makeErrnoError(base::ErrorCode::NotFound, errno, "cannot stat %s",
                                        path.c_str());
        if (!S_ISCHR(st.st_mode))
            return base::makeError(base::ErrorCode::InvalidArgument, "%s is not a character device",
                                   path.c_str());
        if (major(st.st_rdev) == 1 || major(st.st_rdev) == 4 || major(st.st_rdev) == 5)
            return base::makeError(base::ErrorCode::InvalidArgument,
                                   "%s (%u:%u) is a device criu dumps itself; choose another",
                                   path.c_str(), major(st.st_rdev), minor(st.st_rdev));
        return st.st_rdev;
    };
    if (!requested.empty())
        return numbersOf(requested);
    for (const char* candidate : kCandidateDevices) {
        auto rdev = numbersOf(candidate);
        if (rdev.ok())
            return rdev;
    }
    return base::makeError(base::ErrorCode::NotFound,
                           "no character device to model the mock GPU on (tried "
                           "/dev/cpu_dma_latency, /dev/kvm, /dev/hwrng, ...); pass --device-node");
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    size_t e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

} // namespace

std::string canonicalRoot(const std::string& root) {
    std::error_code ec;
    auto canon = std::filesystem::weakly_canonical(std::filesystem::absolute(root, ec), ec);
    return ec ? root : canon.string();
}

int hostPid() {
    char buf[64] = {0};
    ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
    return n > 0 ? atoi(buf) : getpid();
}

base::Result<void> initMachine(const std::string& root, const std::string& topologyDir,
                               const std::string& deviceNode) {
    HAL_TRY_ASSIGN_CONTEXT(topology::Topology topo, topology::readKfdTopology(topologyDir),
                           "mock init: reading the topology %s", topologyDir.c_str());
    if (topo.gpus().empty())
        return base::makeError(base::ErrorCode::Topology,
                               "mock init: the topology %s has no GPU node", topologyDir.c_str());
    HAL_TRY_ASSIGN(dev_t rdev, pickDevice(deviceNode));
    MachinePaths paths{root};
    if (std::filesystem::exists(paths.config()))
        removeTree(paths.topology());
    HAL_TRY(makeDirs(root));
    removeTree(paths.state());
    std::error_code ec;
    std::filesystem::copy(topologyDir, paths.topology(), std::filesystem::copy_options::recursive,
                          ec);
    if (ec)
        return base::makeError(base::ErrorCode::Io, "mock init: copying %s to %s: %s",
                               topologyDir.c_str(), paths.topology().c_str(), ec.message().c_str());
    HAL_TRY(makeDirs(paths.contexts()));
    HAL_TRY(makeDeviceNodes(root, topo, rdev));
    std::ostringstream conf;
    conf << "# mock GPU machine (criu-amdgpu mock init)\n"
         << "device_major " << major(rdev) << "\n"
         << "device_minor " << minor(rdev) << "\n"
         << "budget_bytes 0\n";
    return writeFileAtomic(paths.config(), conf.str());
}

base::Result<MachineConfig> readMachineConfig(const std::string& root) {
    MachinePaths paths{root};
    auto text = readWholeFile(paths.config());
    if (!text.ok())
        return base::makeError(base::ErrorCode::NotPresent,
                               "%s is not a mock GPU machine (no machine.conf; run 'criu-amdgpu "
                               "mock init --root %s --topology DIR')",
                               root.c_str(), root.c_str());
    MachineConfig cfg;
    unsigned maj = 0, min = 0;
    bool haveMaj = false, haveMin = false;
    std::istringstream lines(text.value());
    std::string line;
    int lineNo = 0;
    while (std::getline(lines, line)) {
        ++lineNo;
        line = trim(line);
        if (line.empty() || line[0] == '#')
            continue;
        std::istringstream words(line);
        std::string key;
        unsigned long long value = 0;
        if (!(words >> key >> value))
            return base::makeError(base::ErrorCode::Config, "%s:%d: expected 'key number'",
                                   paths.config().c_str(), lineNo);
        if (key == "device_major")
            maj = static_cast<unsigned>(value), haveMaj = true;
        else if (key == "device_minor")
            min = static_cast<unsigned>(value), haveMin = true;
        else if (key == "budget_bytes")
            cfg.budgetBytes = value;
        else
            return base::makeError(base::ErrorCode::Config,
                                   "%s:%d: unknown key '%s' (device_major, device_minor, "
                                   "budget_bytes)",
                                   paths.config().c_str(), lineNo, key.c_str());
    }
    if (!haveMaj || !haveMin)
        return base::makeError(base::ErrorCode::Config, "%s: device_major and device_minor needed",
                               paths.config().c_str());
    cfg.deviceRdev = makedev(maj, min);
    return cfg;
}

base::Result<void> resetMachine(const std::string& root) {
    HAL_TRY(readMachineConfig(root));
    MachinePaths paths{root};
    removeTree(paths.state());
    return makeDirs(paths.contexts());
}

base::Result<topology::Topology> readMachineTopology(const std::string& root) {
    HAL_TRY(readMachineConfig(root));
    return topology::readKfdTopology(MachinePaths{root}.topology());
}

base::Result<uint64_t> gpuBudget(const std::string& root, uint32_t gpuId) {
    HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
    if (cfg.budgetBytes)
        return cfg.budgetBytes;
    HAL_TRY_ASSIGN(topology::Topology topo, readMachineTopology(root));
    const topology::Node* gpu = topo.findGpu(gpuId);
    if (!gpu)
        return base::makeError(base::ErrorCode::NotFound, "mock machine %s has no GPU 0x%04x",
                               root.c_str(), gpuId);
    return gpu->vramSize();
}

base::Result<std::string> describeMachine(const std::string& root) {
    HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
    HAL_TRY_ASSIGN(topology::Topology topo, readMachineTopology(root));
    HAL_TRY_ASSIGN(auto contexts, listContexts(root));
    std::ostringstream out;
    out << "mock GPU machine " << root << " (device nodes " << major(cfg.deviceRdev) << ":"
        << minor(cfg.deviceRdev) << ")\n";
    for (const topology::Node* gpu : topo.gpus()) {
        HAL_TRY_ASSIGN(uint64_t budget, gpuBudget(root, gpu->gpuId));
        HAL_TRY_ASSIGN(uint64_t used, gpuMemoryInUse(root, gpu->gpuId));
        out << base::strFormat("GPU 0x%04x  node %u  renderD%d  budget %llu bytes  in use %llu\n",
                               gpu->gpuId, gpu->index, gpu->renderMinor(),
                               static_cast<unsigned long long>(budget),
                               static_cast<unsigned long long>(used));
    }
    if (contexts.empty())
        out << "no open devices\n";
    // Which BOs hold the same memory.
    std::map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> holders;
    for (const Context& ctx : contexts)
        if (auto s = ctx.load(); s.ok())
            for (const BufferObject& bo : s->bos)
                if (auto memory = ctx.boMemory(bo.handle); memory.ok() && memory->holders > 1)
                    holders[memory->id].emplace_back(ctx.id(), bo.handle);
    auto sharedWith = [&](const Context& ctx, uint32_t handle) {
        std::string text;
        auto memory = ctx.boMemory(handle);
        if (!memory.ok() || memory->holders < 2)
            return text;
        for (const auto& [otherCtx, otherBo] : holders[memory->id])
            if (otherCtx != ctx.id() || otherBo != handle)
                text += base::strFormat("%scontext %u bo %u", text.empty() ? "" : ", ", otherCtx,
                                        otherBo);
        return "  shared with " + (text.empty() ? std::string("a BO no context lists") : text);
    };
    for (const Context& ctx : contexts) {
        auto state = ctx.load();
        if (!state.ok()) {
            out << "context " << ctx.id() << ": unreadable: " << state.error().describe() << "\n";
            continue;
        }
        const ContextState& s = state.value();
        uint64_t bytes = 0;
        for (const BufferObject& bo : s.bos)
            bytes += bo.size;
        out << base::strFormat(
            "context %u  GPU 0x%04x (seen as 0x%04x)  pid %d  %s  %zu buffers "
            "(%llu bytes)  %zu queues  %zu events\n",
            ctx.id(), s.gpuId, s.userGpuId, s.ownerPid, ctx.pausedMarker() ? "PAUSED" : "running",
            s.bos.size(), static_cast<unsigned long long>(bytes), s.queues.size(), s.events.size());
        for (const BufferObject& bo : s.bos)
            out << base::strFormat(
                "  bo %u  size %llu  va 0x%llx  flags 0x%x%s%s\n", bo.handle,
                static_cast<unsigned long long>(bo.size), static_cast<unsigned long long>(bo.gpuVa),
                bo.flags, bo.imported ? "  imported" : "", sharedWith(ctx, bo.handle).c_str());
        for (const Queue& q : s.queues)
            out << base::strFormat("  queue %u  submitted %llu  completed %llu\n", q.id,
                                   static_cast<unsigned long long>(q.submitted),
                                   static_cast<unsigned long long>(q.completed));
    }
    return out.str();
}

} // namespace mock
