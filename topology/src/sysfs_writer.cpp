#include "sysfs_text.h"
#include "topology/sysfs.h"

#include <cerrno>
#include <sys/stat.h>

namespace topology {

using base::ErrorCode;
using base::makeErrnoError;
using base::Result;
using base::success;

namespace {

Result<void> makeDir(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
        return makeErrnoError(ErrorCode::Io, errno, "cannot create directory %s", path.c_str());
    return success();
}

Result<void> write(const std::string& path, const std::string& text) {
    if (int err = sysfs::writeFile(path, text))
        return makeErrnoError(ErrorCode::Io, err, "cannot write %s", path.c_str());
    return success();
}

Result<void> makeDirs(const std::string& path) {
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        partial = path.substr(0, pos);
        if (!partial.empty())
            HAL_TRY(makeDir(partial));
    }
    return success();
}

Result<void> writeLinks(const std::string& dir, const std::vector<Link>& links) {
    if (links.empty())
        return success();
    HAL_TRY(makeDir(dir));
    for (size_t i = 0; i < links.size(); ++i) {
        const Link& l = links[i];
        std::map<std::string, uint64_t> props = l.properties;
        props["type"] = l.type;
        props["node_from"] = l.nodeFrom;
        props["node_to"] = l.nodeTo;
        props["weight"] = l.weight;
        std::string sub = dir + "/" + std::to_string(i);
        HAL_TRY(makeDir(sub));
        HAL_TRY(write(sub + "/properties",
                      sysfs::formatKeyValues(props, l.textProperties, sysfs::linkKeyOrder())));
    }
    return success();
}

Result<void> writeNode(const std::string& dir, const Node& node) {
    HAL_TRY(makeDir(dir));
    HAL_TRY(write(dir + "/gpu_id", std::to_string(node.gpuId) + "\n"));
    HAL_TRY(write(dir + "/name", node.name + "\n"));
    HAL_TRY(write(dir + "/properties", sysfs::formatKeyValues(node.properties, node.textProperties,
                                                              sysfs::nodeKeyOrder())));
    if (!node.memBanks.empty()) {
        HAL_TRY(makeDir(dir + "/mem_banks"));
        for (size_t i = 0; i < node.memBanks.size(); ++i) {
            const MemBank& bank = node.memBanks[i];
            std::map<std::string, uint64_t> props = bank.properties;
            props["heap_type"] = bank.heapType;
            props["size_in_bytes"] = bank.sizeInBytes;
            std::string sub = dir + "/mem_banks/" + std::to_string(i);
            HAL_TRY(makeDir(sub));
            HAL_TRY(write(sub + "/properties", sysfs::formatKeyValues(props, bank.textProperties,
                                                                      sysfs::memBankKeyOrder())));
            if (bank.usedMemory)
                HAL_TRY(write(sub + "/used_memory", std::to_string(*bank.usedMemory) + "\n"));
        }
    }
    if (!node.caches.empty()) {
        HAL_TRY(makeDir(dir + "/caches"));
        for (size_t i = 0; i < node.caches.size(); ++i) {
            const Cache& cache = node.caches[i];
            int dirIndex = cache.dirIndex >= 0 ? cache.dirIndex : static_cast<int>(i);
            std::string sub = dir + "/caches/" + std::to_string(dirIndex);
            HAL_TRY(makeDir(sub));
            HAL_TRY(write(sub + "/properties",
                          sysfs::formatKeyValues(cache.properties, cache.textProperties,
                                                 sysfs::cacheKeyOrder())));
        }
    }
    HAL_TRY(writeLinks(dir + "/io_links", node.ioLinks));
    HAL_TRY(writeLinks(dir + "/p2p_links", node.p2pLinks));
    return success();
}

} // namespace

Result<void> writeKfdTopology(const Topology& topology, const std::string& root) {
    HAL_TRY(makeDirs(root));
    HAL_TRY(makeDir(root + "/nodes"));
    if (topology.generationId)
        HAL_TRY(write(root + "/generation_id", std::to_string(*topology.generationId) + "\n"));
    if (!topology.systemProperties.empty())
        HAL_TRY(write(root + "/system_properties",
                      sysfs::formatKeyValues(topology.systemProperties, {},
                                             {"platform_oem", "platform_id", "platform_rev"})));
    for (const Node& node : topology.nodes)
        HAL_TRY_CONTEXT(writeNode(root + "/nodes/" + std::to_string(node.index), node),
                        "while writing node %u of %s", node.index, root.c_str());
    return success();
}

} // namespace topology
