// criu-amdgpu topology, run as a process: exit codes and the JSON shape of `match --json` (read
// with nlohmann::json; tests/tools/topology_json_test.cpp checks every field).
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct ToolRun {
    int status = -1;
    std::string out;
};

ToolRun run(const std::string& args, const std::string& env = "") {
    std::string cmd =
        "env -u CRIU_AMDGPU_CONFIG " + env + " " + CRIU_AMDGPU_TOOL + " " + args + " 2>/dev/null";
    ToolRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p)
        return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        r.out.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

class TopologyCli : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(
            run("topology generate --out " + dir_ / "big" + " --gpus 4 --hives 2 --cpus 2").status,
            0);
        ASSERT_EQ(run("topology generate --out " + dir_ / "small" +
                      " --gpus 2 --hives 1 --gpu-id-base 0x4000 --vram 16G")
                      .status,
                  0);
    }
    testsupport::TempDir dir_;
};

// Whether `out` is one line holding {"matched": bool, "mapping": [{"src_gpu_id": n, "dst_gpu_id":
// n}...], "reasons": [string...]}, with the keys in that order.
::testing::AssertionResult isMatchJson(const std::string& out) {
    if (out.empty() || out.find('\n') != out.size() - 1)
        return ::testing::AssertionFailure() << "not one line: " << out;
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(out, nullptr, false);
    if (json.is_discarded() || !json.is_object() || json.size() != 3)
        return ::testing::AssertionFailure() << "not an object of three keys: " << out;
    auto key = json.begin();
    bool shape = key.key() == "matched" && key->is_boolean() && (++key).key() == "mapping" &&
                 key->is_array() && (++key).key() == "reasons" && key->is_array();
    for (const auto& pair : json.value("mapping", nlohmann::ordered_json::array()))
        shape = shape && pair.is_object() && pair.size() == 2 &&
                pair.value("src_gpu_id", nlohmann::ordered_json()).is_number_unsigned() &&
                pair.value("dst_gpu_id", nlohmann::ordered_json()).is_number_unsigned();
    for (const auto& reason : json.value("reasons", nlohmann::ordered_json::array()))
        shape = shape && reason.is_string();
    if (!shape)
        return ::testing::AssertionFailure() << "not the match shape: " << out;
    return ::testing::AssertionSuccess();
}

TEST_F(TopologyCli, MatchFoundExitsZeroWithOneJsonObject) {
    ToolRun r = run("topology match --json --src " + dir_ / "big" + " --dst " + dir_ / "big");
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(isMatchJson(r.out));
    EXPECT_NE(r.out.find("\"matched\":true"), std::string::npos);
    EXPECT_NE(r.out.find("{\"src_gpu_id\":4096,\"dst_gpu_id\":4096}"), std::string::npos) << r.out;
}

TEST_F(TopologyCli, NoMappingExitsTwoWithReasons) {
    ToolRun r = run("topology match --json --src " + dir_ / "big" + " --dst " + dir_ / "small");
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(isMatchJson(r.out));
    EXPECT_NE(r.out.find("\"matched\":false,\"mapping\":[]"), std::string::npos) << r.out;
}

TEST_F(TopologyCli, VramCheckEnvironmentVariableRelaxes) {
    std::string args = "topology match --json --src " + dir_ / "big" + " --dst " + dir_ / "big2";
    ASSERT_EQ(run("topology generate --out " + dir_ / "big2" +
                  " --gpus 4 --hives 2 --cpus 2 --vram 1G --gpu-id-base 0x8000")
                  .status,
              0);
    ToolRun strict = run(args);
    EXPECT_EQ(strict.status, 2);
    EXPECT_NE(strict.out.find("KFD_VRAM_SIZE_CHECK=0"), std::string::npos) << strict.out;
    ToolRun relaxed = run(args, "KFD_VRAM_SIZE_CHECK=0");
    EXPECT_EQ(relaxed.status, 0) << relaxed.out;
    EXPECT_TRUE(isMatchJson(relaxed.out));
}

TEST_F(TopologyCli, MissingTreeIsBadInput) {
    EXPECT_EQ(
        run("topology match --json --src " + dir_ / "nothing" + " --dst " + dir_ / "big").status,
        1);
    EXPECT_EQ(run("topology match --src " + dir_ / "big").status, 1);
    EXPECT_EQ(run("topology frobnicate").status, 1);
}

TEST_F(TopologyCli, ShowJsonDescribesTheTree) {
    ToolRun r = run("topology show --json --root " + dir_ / "big");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out.rfind("{\"source\":", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("\"gpu_count\":4"), std::string::npos);
    EXPECT_NE(r.out.find("\"cpu_count\":2"), std::string::npos);
}

TEST_F(TopologyCli, GenerateRefusesToOverwriteAndBadNumbers) {
    EXPECT_EQ(run("topology generate --out " + dir_ / "big").status, 1);
    EXPECT_EQ(run("topology generate --out " + dir_ / "x" + " --gpus many").status, 1);
    EXPECT_EQ(run("topology generate --out " + dir_ / "y" + " --gpus 2 --hives 3").status, 1);
}

} // namespace
