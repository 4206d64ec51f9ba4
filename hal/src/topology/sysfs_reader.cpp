#include "hal/log.h"
#include "hal/topology_sysfs.h"
#include "sysfs_text.h"

#include <cerrno>
#include <cstring>
#include <set>
#include <sys/stat.h>

namespace hal {
namespace {

std::string errText(int err) { return strerror(err); }

// Reads "<dir>/properties" of a link; false (with a note) when unreadable.
bool readLink(const std::string& dir, Link* link, std::string* problem) {
    std::string text;
    if (int err = sysfs::readFile(dir + "/properties", &text)) {
        *problem = dir + "/properties: " + errText(err);
        return false;
    }
    sysfs::parseKeyValues(text, &link->properties, &link->textProperties);
    link->type = static_cast<uint32_t>(link->properties.count("type") ? link->properties["type"] : 0);
    link->nodeFrom = static_cast<uint32_t>(link->properties.count("node_from") ? link->properties["node_from"] : 0);
    link->nodeTo = static_cast<uint32_t>(link->properties.count("node_to") ? link->properties["node_to"] : 0);
    link->weight = static_cast<uint32_t>(link->properties.count("weight") ? link->properties["weight"] : 0);
    return true;
}

void readLinks(const std::string& dir, uint32_t nodeIndex, std::vector<Link>* out,
               std::vector<std::string>* notes) {
    int err = 0;
    std::vector<unsigned> entries = sysfs::numberedEntries(dir, &err);
    if (err && err != ENOENT)
        notes->push_back(dir + ": " + errText(err));
    for (unsigned i : entries) {
        Link link;
        std::string problem;
        if (!readLink(dir + "/" + std::to_string(i), &link, &problem)) {
            notes->push_back(problem);
            continue;
        }
        if (!link.properties.count("node_from"))
            link.nodeFrom = nodeIndex;
        out->push_back(std::move(link));
    }
}

void readMemBanks(const std::string& dir, Node* node, std::vector<std::string>* notes) {
    int err = 0;
    std::vector<unsigned> entries = sysfs::numberedEntries(dir, &err);
    if (err && err != ENOENT)
        notes->push_back(dir + ": " + errText(err));
    for (unsigned i : entries) {
        std::string sub = dir + "/" + std::to_string(i);
        std::string text;
        if (int e = sysfs::readFile(sub + "/properties", &text)) {
            notes->push_back(sub + "/properties: " + errText(e));
            continue;
        }
        MemBank bank;
        sysfs::parseKeyValues(text, &bank.properties, &bank.textProperties);
        bank.heapType = static_cast<uint32_t>(bank.properties.count("heap_type") ? bank.properties["heap_type"] : 0);
        bank.sizeInBytes = bank.properties.count("size_in_bytes") ? bank.properties["size_in_bytes"] : 0;
        std::string used;
        if (sysfs::readFile(sub + "/used_memory", &used) == 0) {
            std::map<std::string, uint64_t> nums;
            std::map<std::string, std::string> texts;
            sysfs::parseKeyValues("v " + used, &nums, &texts);
            if (nums.count("v"))
                bank.usedMemory = nums["v"];
        }
        node->memBanks.push_back(std::move(bank));
    }
}

void readCaches(const std::string& dir, Node* node, std::vector<std::string>* notes) {
    int err = 0;
    std::vector<unsigned> entries = sysfs::numberedEntries(dir, &err);
    if (err && err != ENOENT)
        notes->push_back(dir + ": " + errText(err));
    for (unsigned i : entries) {
        std::string path = dir + "/" + std::to_string(i) + "/properties";
        std::string text;
        if (int e = sysfs::readFile(path, &text)) {
            notes->push_back(path + ": " + errText(e));
            continue;
        }
        Cache cache;
        cache.dirIndex = static_cast<int>(i);
        sysfs::parseKeyValues(text, &cache.properties, &cache.textProperties);
        node->caches.push_back(std::move(cache));
    }
}

// Reads one node; false with a reason when the node cannot be read at all (cgroup-hidden GPU,
// unreadable or missing properties).
bool readNode(const std::string& dir, uint32_t index, Node* node, bool* hasGpuIdFile,
              std::string* reason, std::vector<std::string>* notes) {
    node->index = index;
    std::string text;
    if (int err = sysfs::readFile(dir + "/properties", &text)) {
        *reason = strFormat("node %u: properties: %s", index, errText(err).c_str());
        return false;
    }
    sysfs::parseKeyValues(text, &node->properties, &node->textProperties);
    if (node->properties.empty()) {
        *reason = strFormat("node %u: properties: no \"key value\" lines", index);
        return false;
    }
    std::string gpuId;
    int err = sysfs::readFile(dir + "/gpu_id", &gpuId);
    *hasGpuIdFile = err == 0;
    if (err == 0) {
        std::map<std::string, uint64_t> nums;
        std::map<std::string, std::string> texts;
        sysfs::parseKeyValues("v " + gpuId, &nums, &texts);
        if (!nums.count("v") || nums["v"] > UINT32_MAX) {
            *reason = strFormat("node %u: gpu_id: not a number", index);
            return false;
        }
        node->gpuId = static_cast<uint32_t>(nums["v"]);
    } else if (err != ENOENT) {
        *reason = strFormat("node %u: gpu_id: %s", index, errText(err).c_str());
        return false;
    }
    std::string name;
    if (sysfs::readFile(dir + "/name", &name) == 0) {
        while (!name.empty() && (name.back() == '\n' || name.back() == ' '))
            name.pop_back();
        node->name = name;
    }
    readMemBanks(dir + "/mem_banks", node, notes);
    readCaches(dir + "/caches", node, notes);
    readLinks(dir + "/io_links", index, &node->ioLinks, notes);
    readLinks(dir + "/p2p_links", index, &node->p2pLinks, notes);
    return true;
}

uint16_t crc16(uint16_t crc, uint64_t value) {
    for (int i = 0; i < 8; ++i) {
        crc ^= static_cast<uint16_t>(static_cast<uint8_t>(value >> (8 * i)) << 8);
        for (int b = 0; b < 8; ++b)
            crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
    }
    return crc;
}

// Like the kernel (kfd_generate_gpu_id): a hash of what identifies the device, bumped on collision.
uint32_t syntheticGpuId(const Node& node, const std::set<uint32_t>& taken) {
    uint16_t crc = 0xffff;
    crc = crc16(crc, node.prop("location_id"));
    crc = crc16(crc, node.prop("device_id"));
    crc = crc16(crc, node.prop("domain"));
    crc = crc16(crc, node.index);
    uint32_t id = crc == 0 ? 1 : crc;
    while (taken.count(id))
        id = (id % 0xffff) + 1;
    return id;
}

} // namespace

Result<Topology> readKfdTopology(const std::string& root) {
    Topology topo;
    topo.source = root;
    std::string nodesDir = root + "/nodes";
    int err = 0;
    std::vector<unsigned> indices = sysfs::numberedEntries(nodesDir, &err);
    if (err)
        return makeErrnoError(ErrorCode::Topology, err, "cannot list %s", nodesDir.c_str());
    if (indices.empty())
        return makeError(ErrorCode::Topology, "%s holds no nodes", nodesDir.c_str());

    std::string text;
    if (sysfs::readFile(root + "/generation_id", &text) == 0) {
        std::map<std::string, uint64_t> nums;
        std::map<std::string, std::string> texts;
        sysfs::parseKeyValues("v " + text, &nums, &texts);
        if (nums.count("v"))
            topo.generationId = nums["v"];
    }
    if (sysfs::readFile(root + "/system_properties", &text) == 0) {
        std::map<std::string, std::string> texts;
        sysfs::parseKeyValues(text, &topo.systemProperties, &texts);
    }

    std::vector<bool> hasIdFile;
    for (unsigned index : indices) {
        Node node;
        bool hasId = false;
        std::string reason;
        if (!readNode(nodesDir + "/" + std::to_string(index), index, &node, &hasId, &reason,
                      &topo.notes)) {
            HAL_LOG_WARN("topology %s: skipping %s", root.c_str(), reason.c_str());
            topo.skipped.push_back(reason);
            continue;
        }
        topo.nodes.push_back(std::move(node));
        hasIdFile.push_back(hasId);
    }
    if (topo.nodes.empty())
        return makeError(ErrorCode::Topology, "no node of %s could be read (%s)", nodesDir.c_str(),
                         topo.skipped.empty() ? "none" : topo.skipped.front().c_str());

    // gpu_ids: keep the first holder of each id, renumber later duplicates, derive missing ones.
    std::set<uint32_t> taken;
    std::vector<Node*> needId;
    for (size_t i = 0; i < topo.nodes.size(); ++i) {
        Node& n = topo.nodes[i];
        if (n.prop("simd_count") == 0)
            continue;
        if (n.gpuId == 0 || !taken.insert(n.gpuId).second)
            needId.push_back(&n);
    }
    for (Node* n : needId) {
        uint32_t old = n->gpuId;
        n->gpuId = syntheticGpuId(*n, taken);
        n->syntheticGpuId = true;
        taken.insert(n->gpuId);
        if (old == 0)
            topo.notes.push_back(strFormat("node %u: GPU without a gpu_id; using derived gpu_id %s",
                                           n->index, gpuIdHex(n->gpuId).c_str()));
        else
            topo.notes.push_back(strFormat("node %u: gpu_id %s is already used by another node; "
                                           "using derived gpu_id %s",
                                           n->index, gpuIdHex(old).c_str(), gpuIdHex(n->gpuId).c_str()));
    }

    std::set<uint32_t> present;
    for (const Node& n : topo.nodes)
        present.insert(n.index);
    for (const Node& n : topo.nodes)
        for (const Link& l : n.ioLinks)
            if (!present.count(l.nodeTo))
                topo.notes.push_back(strFormat("node %u: io_link to node %u, which is not readable "
                                               "or not present; link ignored", n.index, l.nodeTo));
    for (const std::string& note : topo.notes)
        HAL_LOG_DEBUG("topology %s: %s", root.c_str(), note.c_str());
    return topo;
}

} // namespace hal
