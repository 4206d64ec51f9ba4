// Reading a KFD sysfs tree, through sysfs::Dir: the real file system on every plugin run, a tree
// held in memory in the fuzz targets (the same code either way). A restore reads the local tree
// every time, and a machine with 64 partitions has thousands of files, so every file is opened
// relative to its open directory (two path components for the kernel to walk), read with one
// read(), and parsed without copies; paths are spelled out only for messages; up to four threads
// share the nodes.
#include "base/log.h"
#include "sysfs_text.h"
#include "topology/gpu_id.h"
#include "topology/sysfs.h"
#include "topology/sysfs_tree.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <system_error>
#include <thread>

namespace topology {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;

namespace {

std::string errText(int err) {
    return strerror(err);
}

// Where the reader is, for messages: the root and the path below it.
struct Place {
    const std::string& root;
    std::string below; // "nodes/3/io_links"
    std::string path(const std::string& name) const { return root + "/" + below + "/" + name; }
};

// The entries of a numbered subdirectory (mem_banks, caches, io_links, p2p_links) of a node,
// each handed to `each(subdirectory, number, text of its properties)`; problems become notes.
template <typename Each>
void forEachNumbered(const sysfs::Dir& node, const Place& at, const char* sub,
                     std::vector<std::string>* notes, std::string* buffer, Each each) {
    int err = 0;
    std::unique_ptr<sysfs::Dir> dir = node.openDir(sub, &err);
    Place here{at.root, at.below + "/" + sub};
    if (!dir) {
        if (err != ENOENT)
            notes->push_back(at.path(sub) + ": " + errText(err));
        return;
    }
    std::vector<unsigned> entries = dir->numberedEntries(&err);
    if (err)
        notes->push_back(at.path(sub) + ": " + errText(err));
    for (unsigned i : entries) {
        std::string name = std::to_string(i) + "/properties";
        if (int e = dir->readFile(name.c_str(), buffer)) {
            notes->push_back(here.path(name) + ": " + errText(e));
            continue;
        }
        each(*dir, i, std::string_view(*buffer));
    }
}

uint32_t narrow(const std::map<std::string, uint64_t>& props, const char* key, uint32_t fallback) {
    auto it = props.find(key);
    return it == props.end() ? fallback : static_cast<uint32_t>(it->second);
}

void readLinks(const sysfs::Dir& node, const Place& at, const char* sub, uint32_t nodeIndex,
               std::vector<Link>* out, std::vector<std::string>* notes, std::string* buffer) {
    forEachNumbered(node, at, sub, notes, buffer,
                    [&](const sysfs::Dir&, unsigned, std::string_view text) {
                        Link link;
                        sysfs::parseKeyValues(text, &link.properties, &link.textProperties);
                        link.type = narrow(link.properties, "type", 0);
                        link.nodeFrom = narrow(link.properties, "node_from", nodeIndex);
                        link.nodeTo = narrow(link.properties, "node_to", 0);
                        link.weight = narrow(link.properties, "weight", 0);
                        out->push_back(std::move(link));
                    });
}

void readMemBanks(const sysfs::Dir& node, const Place& at, Node* out,
                  std::vector<std::string>* notes, std::string* buffer) {
    forEachNumbered(node, at, "mem_banks", notes, buffer,
                    [&](const sysfs::Dir& dir, unsigned i, std::string_view text) {
                        MemBank bank;
                        sysfs::parseKeyValues(text, &bank.properties, &bank.textProperties);
                        bank.heapType = narrow(bank.properties, "heap_type", 0);
                        auto size = bank.properties.find("size_in_bytes");
                        bank.sizeInBytes = size == bank.properties.end() ? 0 : size->second;
                        std::string used;
                        std::string usedName = std::to_string(i) + "/used_memory";
                        if (dir.readFile(usedName.c_str(), &used) == 0)
                            bank.usedMemory = sysfs::parseNumber(used);
                        out->memBanks.push_back(std::move(bank));
                    });
}

void readCaches(const sysfs::Dir& node, const Place& at, Node* out, std::vector<std::string>* notes,
                std::string* buffer) {
    forEachNumbered(node, at, "caches", notes, buffer,
                    [&](const sysfs::Dir&, unsigned i, std::string_view text) {
                        Cache cache;
                        cache.dirIndex = static_cast<int>(i);
                        sysfs::parseKeyValues(text, &cache.properties, &cache.textProperties);
                        out->caches.push_back(std::move(cache));
                    });
}

// Reads one node; false with a reason when the node cannot be read at all (cgroup-hidden GPU,
// unreadable or missing properties).
bool readNode(const sysfs::Dir& nodes, const std::string& root, uint32_t index, Node* node,
              std::string* reason, std::vector<std::string>* notes, std::string* buffer) {
    node->index = index;
    std::string name = std::to_string(index);
    int err = 0;
    std::unique_ptr<sysfs::Dir> dir = nodes.openDir(name.c_str(), &err);
    if (dir)
        err = dir->readFile("properties", buffer);
    if (err) {
        *reason = strFormat("node %u: properties: %s", index, errText(err).c_str());
        return false;
    }
    sysfs::parseKeyValues(*buffer, &node->properties, &node->textProperties);
    if (node->properties.empty()) {
        *reason = strFormat("node %u: properties: no \"key value\" lines", index);
        return false;
    }
    err = dir->readFile("gpu_id", buffer);
    if (err == 0) {
        std::optional<uint64_t> id = sysfs::parseNumber(*buffer);
        if (!id || *id > UINT32_MAX) {
            *reason = strFormat("node %u: gpu_id: not a number", index);
            return false;
        }
        node->gpuId = static_cast<uint32_t>(*id);
    } else if (err != ENOENT) {
        *reason = strFormat("node %u: gpu_id: %s", index, errText(err).c_str());
        return false;
    }
    if (dir->readFile("name", buffer) == 0) {
        std::string_view text = *buffer;
        while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
            text.remove_suffix(1);
        node->name = text;
    }
    Place at{root, "nodes/" + name};
    readMemBanks(*dir, at, node, notes, buffer);
    readCaches(*dir, at, node, notes, buffer);
    readLinks(*dir, at, "io_links", index, &node->ioLinks, notes, buffer);
    readLinks(*dir, at, "p2p_links", index, &node->p2pLinks, notes, buffer);
    return true;
}

} // namespace

Result<Topology> readKfdTopology(const std::string& root) {
    return readKfdTopology(sysfs::realFileSystem(), root);
}

Result<Topology> readKfdTopology(const sysfs::Dir& base, const std::string& root) {
    Topology topo;
    topo.source = root;
    std::string nodesDir = root + "/nodes";
    int err = 0;
    // A root that cannot be listed may still be searched: nodes/ is then opened by its path.
    std::unique_ptr<sysfs::Dir> top = base.openDir(root.c_str(), &err);
    std::unique_ptr<sysfs::Dir> nodes =
        top ? top->openDir("nodes", &err) : base.openDir(nodesDir.c_str(), &err);
    std::vector<unsigned> indices;
    if (nodes)
        indices = nodes->numberedEntries(&err);
    if (err)
        return makeErrnoError(ErrorCode::Topology, err, "cannot list %s", nodesDir.c_str());
    if (indices.empty())
        return makeError(ErrorCode::Topology, "%s holds no nodes", nodesDir.c_str());

    std::string buffer;
    if (top && top->readFile("generation_id", &buffer) == 0)
        topo.generationId = sysfs::parseNumber(buffer);
    if (top && top->readFile("system_properties", &buffer) == 0) {
        std::map<std::string, std::string> texts;
        sysfs::parseKeyValues(buffer, &topo.systemProperties, &texts);
    }

    // Nodes are read by up to four threads at once (thread k reads every k-th node): the reading
    // is system calls, which run in parallel on separate cores; the results are merged in node
    // order.
    struct Slot {
        Node node;
        bool ok = false;
        std::string reason;
        std::vector<std::string> notes;
    };
    std::vector<Slot> slots(indices.size());
    auto work = [&](size_t first, size_t step) {
        std::string buf;
        for (size_t i = first; i < indices.size(); i += step) {
            Slot& slot = slots[i];
            slot.ok =
                readNode(*nodes, root, indices[i], &slot.node, &slot.reason, &slot.notes, &buf);
        }
    };
    size_t threads =
        indices.size() >= 8 ? std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4) : 1;
    std::vector<std::thread> helpers;
    for (size_t k = 1; k < threads; ++k) {
        try {
            helpers.emplace_back(work, k, threads);
        } catch (const std::system_error&) {
            break; // no more threads to be had: the nodes left are read here
        }
    }
    work(0, threads);
    for (size_t k = helpers.size() + 1; k < threads; ++k)
        work(k, threads); // the share of a thread that could not start
    for (std::thread& t : helpers)
        t.join();
    topo.nodes.reserve(indices.size());
    for (Slot& slot : slots) {
        topo.notes.insert(topo.notes.end(), slot.notes.begin(), slot.notes.end());
        if (!slot.ok) {
            HAL_LOG_WARN("topology %s: skipping %s", root.c_str(), slot.reason.c_str());
            topo.skipped.push_back(std::move(slot.reason));
            continue;
        }
        topo.nodes.push_back(std::move(slot.node));
    }
    if (topo.nodes.empty())
        return makeError(ErrorCode::Topology, "no node of %s could be read (%s)", nodesDir.c_str(),
                         topo.skipped.empty() ? "none" : topo.skipped.front().c_str());

    completeGpuIds(&topo);

    std::set<uint32_t> present;
    for (const Node& n : topo.nodes)
        present.insert(n.index);
    for (const Node& n : topo.nodes)
        for (const Link& l : n.ioLinks)
            if (!present.count(l.nodeTo))
                topo.notes.push_back(strFormat("node %u: io_link to node %u, which is not readable "
                                               "or not present; link ignored",
                                               n.index, l.nodeTo));
    for (const std::string& note : topo.notes)
        HAL_LOG_DEBUG("topology %s: %s", root.c_str(), note.c_str());
    return topo;
}

} // namespace topology
