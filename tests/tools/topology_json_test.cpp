// criu-amdgpu topology show --json and match --json, field by field: the keys in their order,
// their types, and for show the values against the sysfs files the tool read (a generated tree,
// and every real capture in the shared fixtures when they are present).
#include "run_tool.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using tooltest::RunResult;
using tooltest::runTool;

using Properties = std::map<std::string, uint64_t>;

std::vector<std::string> keys(const ordered_json& object) {
    std::vector<std::string> out;
    for (const auto& item : object.items())
        out.push_back(item.key());
    return out;
}

// A sysfs properties file: "key value" lines.
Properties readProperties(const fs::path& file) {
    Properties out;
    std::ifstream in(file);
    std::string key, value;
    while (in >> key >> value)
        out[key] = std::stoull(value);
    return out;
}

std::string readLine(const fs::path& file) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

Properties propertiesOf(const ordered_json& object) {
    Properties out;
    for (const auto& item : object.items()) {
        EXPECT_TRUE(item.value().is_number_unsigned()) << item.key();
        out[item.key()] = item.value().get<uint64_t>();
    }
    return out;
}

// The links of `dir` (io_links or p2p_links) against their JSON array: every link shown is one
// of the sysfs links, with the same properties; all of them when the reader skipped nothing.
void checkLinks(const fs::path& dir, const ordered_json& links, bool skippedSome) {
    ASSERT_TRUE(links.is_array());
    std::set<Properties> files;
    if (fs::exists(dir))
        for (const auto& entry : fs::directory_iterator(dir))
            files.insert(readProperties(entry.path() / "properties"));
    for (const ordered_json& l : links) {
        EXPECT_EQ(keys(l), (std::vector<std::string>{"type", "node_from", "node_to", "weight",
                                                     "properties"}));
        Properties p = propertiesOf(l.at("properties"));
        EXPECT_TRUE(files.count(p)) << dir << ": " << l.dump();
        EXPECT_EQ(l.at("type").get<uint64_t>(), p["type"]);
        EXPECT_EQ(l.at("node_from").get<uint64_t>(), p["node_from"]);
        EXPECT_EQ(l.at("node_to").get<uint64_t>(), p["node_to"]);
        EXPECT_EQ(l.at("weight").get<uint64_t>(), p["weight"]);
    }
    if (!skippedSome) {
        EXPECT_EQ(links.size(), files.size()) << dir;
    }
}

// `topology show --json --root root`, checked against the files under root.
void checkShow(const fs::path& root) {
    RunResult r = runTool({"topology", "show", "--json", "--root", root});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    ASSERT_EQ(r.out.find('\n'), r.out.size() - 1) << "not one line: " << r.out;
    ordered_json t = ordered_json::parse(r.out, nullptr, false);
    ASSERT_FALSE(t.is_discarded()) << r.out;
    EXPECT_EQ(keys(t), (std::vector<std::string>{"source", "gpu_count", "cpu_count", "hives",
                                                 "nodes", "skipped", "notes"}));
    EXPECT_EQ(t.at("source"), root.string());
    for (const char* list : {"skipped", "notes"}) {
        ASSERT_TRUE(t.at(list).is_array());
        for (const ordered_json& s : t.at(list))
            EXPECT_TRUE(s.is_string()) << list;
    }
    bool skippedSome = !t.at("skipped").empty();
    std::set<uint64_t> hives;
    for (const ordered_json& h : t.at("hives"))
        hives.insert(h.get<uint64_t>());
    uint64_t gpus = 0, cpus = 0;
    std::set<uint64_t> nodeHives;
    for (const ordered_json& n : t.at("nodes")) {
        EXPECT_EQ(keys(n),
                  (std::vector<std::string>{"index", "kind", "gpu_id", "gpu_id_derived", "name",
                                            "vram_bytes", "render_minor", "hive_id", "properties",
                                            "mem_banks", "caches_read", "io_links", "p2p_links"}));
        fs::path dir = root / "nodes" / std::to_string(n.at("index").get<uint64_t>());
        SCOPED_TRACE(dir.string());
        Properties p = readProperties(dir / "properties");
        EXPECT_EQ(propertiesOf(n.at("properties")), p);
        std::string kind = n.at("kind");
        // topology/topology.h: a GPU has a gpu_id and SIMDs, a CPU has cores, an APU both.
        bool gpu = n.at("gpu_id") != 0 && p["simd_count"] > 0, cpu = p["cpu_cores_count"] > 0;
        EXPECT_EQ(kind, gpu && cpu ? "apu" : gpu ? "gpu" : cpu ? "cpu" : "other");
        gpus += gpu;
        cpus += cpu;
        ASSERT_TRUE(n.at("gpu_id_derived").is_boolean());
        // No gpu_id file: 0, or for a GPU a gpu_id derived as the kernel derives it.
        if (!n.at("gpu_id_derived").get<bool>()) {
            EXPECT_EQ(std::to_string(n.at("gpu_id").get<uint64_t>()),
                      fs::exists(dir / "gpu_id") ? readLine(dir / "gpu_id") : "0");
        }
        std::string name = readLine(dir / "name");
        EXPECT_EQ(n.at("name"), name.substr(0, name.find_last_not_of(" \t") + 1));
        EXPECT_TRUE(n.at("vram_bytes").is_number_unsigned());
        EXPECT_TRUE(n.at("render_minor").is_number_integer());
        EXPECT_EQ(n.at("render_minor").get<int64_t>(),
                  p.count("drm_render_minor") ? int64_t(p["drm_render_minor"]) : -1);
        EXPECT_EQ(n.at("hive_id").get<uint64_t>(), p["hive_id"]);
        if (p["hive_id"])
            nodeHives.insert(p["hive_id"]);
        uint64_t banks = 0, vram = 0;
        for (const ordered_json& b : n.at("mem_banks")) {
            EXPECT_EQ(keys(b), (std::vector<std::string>{"heap_type", "size_in_bytes"}));
            Properties bank =
                readProperties(dir / "mem_banks" / std::to_string(banks++) / "properties");
            EXPECT_EQ(b.at("heap_type").get<uint64_t>(), bank["heap_type"]);
            EXPECT_EQ(b.at("size_in_bytes").get<uint64_t>(), bank["size_in_bytes"]);
            if (bank["heap_type"] == 1 || bank["heap_type"] == 2)
                vram += bank["size_in_bytes"];
        }
        // local_mem_size when the kernel reports it, else the frame buffer banks.
        EXPECT_EQ(n.at("vram_bytes").get<uint64_t>(),
                  p["local_mem_size"] ? p["local_mem_size"] : vram);
        EXPECT_TRUE(n.at("caches_read").is_number_unsigned());
        checkLinks(dir / "io_links", n.at("io_links"), skippedSome);
        checkLinks(dir / "p2p_links", n.at("p2p_links"), skippedSome);
    }
    EXPECT_EQ(t.at("gpu_count").get<uint64_t>(), gpus);
    EXPECT_EQ(t.at("cpu_count").get<uint64_t>(), cpus);
    EXPECT_EQ(hives, nodeHives);
}

class ToolTopologyJson : public ::testing::Test {
protected:
    std::string generate(const std::string& name, const std::vector<std::string>& args) {
        std::vector<std::string> all = {"topology", "generate", "--out", dir_ / name};
        all.insert(all.end(), args.begin(), args.end());
        RunResult r = runTool(all);
        EXPECT_EQ(r.exitCode, 0) << r.describe();
        return dir_ / name;
    }
    // `topology match --json` from `src` to `dst` (trees of 2 and 4 GPUs): its exit code must be
    // `exitCode`, its keys matched, mapping, reasons in this order.
    ordered_json match(const std::string& src, const std::string& dst, int exitCode) {
        std::map<std::string, std::vector<std::string>> args = {
            {"two", {"--gpus", "2"}}, {"four", {"--gpus", "4", "--gpu-id-base", "0x4000"}}};
        std::string srcDir = generate(src, args.at(src)), dstDir = generate(dst, args.at(dst));
        RunResult r = runTool({"topology", "match", "--json", "--src", srcDir, "--dst", dstDir});
        EXPECT_EQ(r.exitCode, exitCode) << r.describe();
        ordered_json m = ordered_json::parse(r.out, nullptr, false);
        EXPECT_FALSE(m.is_discarded()) << r.out;
        EXPECT_EQ(keys(m), (std::vector<std::string>{"matched", "mapping", "reasons"}));
        return m;
    }
    testsupport::TempDir dir_;
};

TEST_F(ToolTopologyJson, GivenAGeneratedTree_WhenShowJson_ThenEveryFieldIsWhatSysfsSays) {
    checkShow(generate("tree", {"--gpus", "4", "--hives", "2", "--cpus", "2"}));
}

TEST_F(ToolTopologyJson, GivenRealCaptures_WhenShowJson_ThenEveryFieldIsWhatSysfsSays) {
    if (!fs::is_directory(CRIU_AMDGPU_SHARED_FIXTURES))
        GTEST_SKIP() << "no captures at " << CRIU_AMDGPU_SHARED_FIXTURES;
    for (const auto& capture : fs::directory_iterator(CRIU_AMDGPU_SHARED_FIXTURES))
        if (fs::is_directory(capture.path() / "nodes"))
            checkShow(capture.path());
}

TEST_F(ToolTopologyJson, GivenAMatch_WhenMatchJson_ThenMatchedMappingAndNoReasons) {
    ordered_json m = match("two", "four", 0);
    EXPECT_EQ(m.at("matched"), true);
    std::set<uint64_t> sources, destinations;
    for (const ordered_json& pair : m.at("mapping")) {
        EXPECT_EQ(keys(pair), (std::vector<std::string>{"src_gpu_id", "dst_gpu_id"}));
        sources.insert(pair.at("src_gpu_id").get<uint64_t>());
        destinations.insert(pair.at("dst_gpu_id").get<uint64_t>());
    }
    EXPECT_EQ(sources, (std::set<uint64_t>{0x1000, 0x1111}));
    EXPECT_EQ(destinations.size(), 2u);
    for (uint64_t d : destinations)
        EXPECT_TRUE(d == 0x4000 || d == 0x4111 || d == 0x4222 || d == 0x4333) << d;
    EXPECT_EQ(m.at("reasons"), ordered_json::array());
}

TEST_F(ToolTopologyJson, GivenNoMapping_WhenMatchJson_ThenNotMatchedWithReasonsAndExitTwo) {
    ordered_json m = match("four", "two", 2);
    EXPECT_EQ(m.at("matched"), false);
    EXPECT_EQ(m.at("mapping"), ordered_json::array());
    ASSERT_FALSE(m.at("reasons").empty());
    for (const ordered_json& reason : m.at("reasons"))
        ASSERT_TRUE(reason.is_string());
    EXPECT_THAT(m.at("reasons")[0].get<std::string>(), testing::HasSubstr("4 GPUs"));
}

} // namespace
