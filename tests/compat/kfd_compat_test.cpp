// The kfd backend against CRIU's own plugin, both ways: what it dumps (on the fake KFD) is read
// by the reference tool built from upstream's schema and rules; what the reference tool writes
// by those rules restores through it with identical contents. Every corruption the rules forbid
// fails, over a directory and over criu's image streamer.
#include "upstream_tool.h"

#include "run_tool.h"

#include "image_streamer.h"
#include "kfd_test_machine.h"

#include "kfd/kfd_criu.h"
#include "kfd/kfd_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace fakekfd;
using compat::runUpstream;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

constexpr uint32_t kKfdId = 10;    // criu's file id of /dev/kfd
constexpr uint32_t kRenderId = 11; // and of the render nodes (one per GPU)
constexpr int kGpus = 3;
constexpr int kPid = 500;

/// Three GPUs: every kind of BO on the first, VRAM and GTT on the second, and a third with
/// neither (its pages file is a header of 0).
ProcessSpec threeGpuProcess() {
    ProcessSpec spec;
    spec.bos = {{0, (3 << 20) + 123, kVram}, {0, 64 << 10, kVramPublic}, {0, 8192 + 7, kGtt},
                {0, 8192, kDoorbell},        {0, 1 << 20, kUserptr},     {1, 4096, kGttAql},
                {1, (200 << 10) + 5, kVram}, {1, 4096, kMmio},           {2, 64 << 10, kUserptr}};
    spec.objects = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xaa, 0x55};
    spec.numObjects = 5;
    return spec;
}

/// Dumps `pid` as criu 4.0+ does: PAUSE_DEVICES, CHECKPOINT_DEVICES, then each file.
void dumpProcess(TestMachine& m, formats::ImageStore& store, int pid) {
    m.kernel->seize(pid);
    auto dev = m.device(&store);
    ASSERT_TRUE(dev->pauseProcess(pid).value());
    auto ck = dev->checkpointProcess(pid);
    ASSERT_TRUE(ck.ok()) << ck.error().describe();
    std::vector<hal::FileRef> files = {m.fileRef(pid, 3, kKfdId)};
    for (int g = 0; g < kGpus; ++g)
        files.push_back(m.fileRef(pid, 4 + g, kRenderId + static_cast<uint32_t>(g)));
    for (const hal::FileRef& f : files) {
        ASSERT_TRUE(dev->claimFile(f).value());
        auto r = dev->dumpFile(f);
        ASSERT_TRUE(r.ok()) << r.error().describe();
        m.kernel->close(f.fd);
    }
    ASSERT_TRUE(dev->finishDump(true).ok());
}

/// The process's VRAM/GTT contents as the reference tool expects them: kfd-<id>-bo-<i>.bin.
void writeExpected(const FakeProcess& p, const std::string& dir) {
    for (size_t i = 0; i < p.bos.size(); ++i)
        if (kfd::boHasContents(p.bos[i]->allocFlags))
            compat::writeBytes(
                dir, "kfd-" + std::to_string(kKfdId) + "-bo-" + std::to_string(i) + ".bin",
                p.bos[i]->data.data(), p.bos[i]->data.size());
}

std::vector<std::string> checkArgs(const std::string& dir, const std::string& expect) {
    return {"check", dir,           "--expect", expect,         "--min-kfd",
            "1",     "--min-pages", "3",        "--min-render", "3"};
}

/// A dump of threeGpuProcess() into a directory, with the contents it should hold.
struct OurDump {
    OurDump() {
        std::filesystem::create_directories(images);
        std::filesystem::create_directories(expect);
        FakeProcess& p = machine.kernel->addProcess(kPid, threeGpuProcess());
        auto store = formats::openDirectoryStore(images).value();
        dumpProcess(machine, *store, kPid);
        writeExpected(p, expect);
    }
    TestMachine machine{machineSpec(kGpus)};
    std::string images = machine.dir / "images";
    std::string expect = machine.dir / "expect";
};

TEST(KfdCompat, OurDumpIsWhatUpstreamsPluginReads) {
    OurDump dump;
    compat::ToolRun run = runUpstream(checkArgs(dump.images, dump.expect));
    EXPECT_EQ(run.status, 0) << run.output;
    EXPECT_THAT(run.output,
                HasSubstr("checked: 1 KFD images, 3 pages files, 3 render-node images"));
}

TEST(KfdCompat, OurDumpThroughTheStreamerIsWhatUpstreamsPluginReads) {
    TestMachine m(machineSpec(kGpus));
    FakeProcess& p = m.kernel->addProcess(kPid, threeGpuProcess());
    std::string sockets = m.dir / "sockets", images = m.dir / "images", expect = m.dir / "expect";
    for (const std::string& d : {sockets, images, expect})
        std::filesystem::create_directories(d);
    auto session = testsupport::StreamerSession::start(sockets, testsupport::StreamerMode::Capture);
    ASSERT_TRUE(session.ok()) << session.error().describe();
    dumpProcess(m, *(*session)->store, kPid);
    auto captured = (*session)->finish();
    ASSERT_TRUE(captured.ok()) << captured.error().describe();
    compat::writeDirectory(images, *captured);
    writeExpected(p, expect);

    compat::ToolRun run = runUpstream(checkArgs(images, expect));
    EXPECT_EQ(run.status, 0) << run.output;
}

/// One way to break a checkpoint, and what the reference tool says about it.
struct Corruption {
    const char* name;
    std::function<void(const std::string& dir)> apply;
    const char* message;
};

void PrintTo(const Corruption& c, std::ostream* os) {
    *os << c.name;
}

void editFile(const std::string& path, const std::function<void(std::string&)>& edit) {
    std::string bytes = testsupport::readFile(path);
    edit(bytes);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

const std::vector<Corruption>& corruptionsOfOurDump() {
    static const std::vector<Corruption> all = {
        {"HeaderNotTheSumOfTheBos",
         [](const std::string& d) {
             editFile(d + "/amdgpu-pages-10-1000.img", [](std::string& b) { b[1] ^= 0x10; });
         },
         "amdgpu-pages-10-1000.img: header"},
        {"PagesFileWithoutHeader",
         [](const std::string& d) {
             editFile(d + "/amdgpu-pages-10-1111.img", [](std::string& b) { b.erase(0, 8); });
         },
         "amdgpu-pages-10-1111.img: header"},
        {"MissingFileOfAGpuWithoutBos",
         [](const std::string& d) { std::filesystem::remove(d + "/amdgpu-pages-10-1222.img"); },
         "amdgpu-pages-10-1222.img: missing"},
        {"ExtraByteAfterTheBos",
         [](const std::string& d) {
             editFile(d + "/amdgpu-pages-10-1111.img", [](std::string& b) { b += 'x'; });
         },
         "bytes follow the header, its BOs hold"},
        {"ExtraByteAfterTheKfdMessage",
         [](const std::string& d) {
             editFile(d + "/amdgpu-kfd-10.img", [](std::string& b) { b += 'x'; });
         },
         "amdgpu-kfd-10.img: header announces"},
        {"RenderNodeMessageWithoutHeader",
         [](const std::string& d) {
             editFile(d + "/amdgpu-renderD-12.img", [](std::string& b) { b.erase(0, 8); });
         },
         "amdgpu-renderD-12.img"},
    };
    return all;
}

class KfdCompatCorruptedDump : public ::testing::TestWithParam<Corruption> {};

TEST_P(KfdCompatCorruptedDump, UpstreamsRulesRejectIt) {
    OurDump dump;
    GetParam().apply(dump.images);
    compat::ToolRun run = runUpstream(checkArgs(dump.images, dump.expect));
    EXPECT_EQ(run.status, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(Each, KfdCompatCorruptedDump, ::testing::ValuesIn(corruptionsOfOurDump()),
                         [](const auto& info) { return std::string(info.param.name); });

// `criu-amdgpu image show/verify/check/flatten` follow a KFD chain as they follow the others:
// ck1 (lz4), ck2 (against ck1), ck3 (against ck2, zstd); the flattened ck3 restores the newest
// bytes and needs no parent.
TEST(KfdCompat, TheImageToolFollowsAKfdChainAndFlattensIt) {
    TestMachine m(machineSpec(kGpus));
    FakeProcess& p = m.kernel->addProcess(kPid, threeGpuProcess());
    const char* dirs[] = {"ck1", "ck2", "ck3"};
    for (int level = 0; level < 3; ++level) {
        m.settings.contentCompression = level == 0 ? "lz4" : level == 1 ? "none" : "zstd";
        m.settings.parentImages = level == 0 ? "" : std::string("../") + dirs[level - 1];
        for (auto& bo : p.bos)
            if (!bo->data.empty())
                bo->data[0] = static_cast<std::byte>(level + 1);
        std::filesystem::create_directories(m.dir / dirs[level]);
        auto store = formats::openDirectoryStore(m.dir / dirs[level]).value();
        dumpProcess(m, *store, kPid);
    }
    std::string ck3 = m.dir / "ck3", flat = m.dir / "flat";
    tooltest::RunResult show = tooltest::runTool({"image", "show", ck3});
    EXPECT_EQ(show.exitCode, 0) << show.describe();
    EXPECT_THAT(show.out, HasSubstr("a contents file per BO"));
    EXPECT_THAT(show.out, Not(HasSubstr("missing")));
    tooltest::RunResult verify = tooltest::runTool({"image", "verify", ck3});
    EXPECT_EQ(verify.exitCode, 0) << verify.describe();
    EXPECT_THAT(verify.out, HasSubstr("all sound"));
    tooltest::RunResult check =
        tooltest::runTool({"image", "check", "--topology", m.sysfsRoot, ck3});
    EXPECT_EQ(check.exitCode, 0) << check.describe();
    EXPECT_THAT(check.out, HasSubstr("backend: kfd"));
    tooltest::RunResult flatten = tooltest::runTool({"image", "flatten", ck3, flat});
    ASSERT_EQ(flatten.exitCode, 0) << flatten.describe();
    EXPECT_THAT(flatten.out, HasSubstr("chains of up to 3 checkpoints"));

    // A damaged parent: verify names it.
    std::string record = m.dir / "ck1/amdgpu-chunks-10.img";
    std::ofstream(record, std::ios::app) << 'x';
    tooltest::RunResult broken = tooltest::runTool({"image", "verify", ck3});
    EXPECT_NE(broken.exitCode, 0) << broken.describe();
    EXPECT_THAT(broken.out + broken.err, HasSubstr("amdgpu-chunks-10.img"));

    std::filesystem::remove_all(m.dir / "ck1"); // the flattened checkpoint needs no parent
    TestMachine dst(machineSpec(kGpus, 0x3000, 150));
    dst.kernel->setCurrentPid(777);
    auto store = formats::openDirectoryStore(flat).value();
    auto dev = dst.device(store.get());
    auto fd = dev->restoreFile(kKfdId);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    FakeProcess* q = dst.kernel->process(777);
    ASSERT_NE(q, nullptr);
    for (size_t i = 0; i < p.bos.size(); ++i)
        EXPECT_TRUE(p.bos[i]->data == q->bos[i]->data) << "BO " << i;
}

// A compressed or incremental KFD checkpoint keeps its contents in files of ours, one per BO:
// upstream's plugin finds no pages file and fails, naming it, instead of restoring wrong bytes.
TEST(KfdCompat, OurCompressedAndIncrementalDumpsFailUpstreamsPluginCleanly) {
    TestMachine m(machineSpec(kGpus));
    FakeProcess& p = m.kernel->addProcess(kPid, threeGpuProcess());
    std::string expect = m.dir / "expect";
    std::filesystem::create_directories(expect);
    writeExpected(p, expect);
    for (const char* dir : {"full-lz4", "incremental"}) {
        SCOPED_TRACE(dir);
        m.settings.contentCompression = dir == std::string("full-lz4") ? "lz4" : "none";
        m.settings.parentImages = dir == std::string("full-lz4") ? "" : "../full-lz4";
        std::filesystem::create_directories(m.dir / dir);
        auto store = formats::openDirectoryStore(m.dir / dir).value();
        dumpProcess(m, *store, kPid);
        compat::ToolRun run = runUpstream(checkArgs(m.dir / dir, expect));
        EXPECT_EQ(run.status, 1) << run.output;
        EXPECT_THAT(run.output, HasSubstr("amdgpu-pages-10-1000.img: missing"));
    }
}

// ---------------------------------------------------------------------------- upstream -> us

/// What the kernel's CRIU ops give for `pid` (PROCESS_INFO, CHECKPOINT, UNPAUSE): the input a
/// writer of checkpoints needs from the kernel, in the reference tool's format.
std::string kernelState(TestMachine& m, int pid) {
    m.kernel->seize(pid);
    int fd = m.kernel->criuCopyOf(pid, 3);
    auto info = kfd::criuProcessInfo(*m.kernel, fd);
    EXPECT_TRUE(info.ok()) << info.error().describe();
    auto data = kfd::criuCheckpoint(*m.kernel, fd, info.value());
    EXPECT_TRUE(data.ok()) << data.error().describe();
    EXPECT_TRUE(kfd::criuUnpause(*m.kernel, fd).ok());
    m.kernel->close(fd);
    std::string out = base::strFormat("pid %u\nnum_objects %u\n", info->pid, data->numObjects);
    for (const kfd_criu_device_bucket& d : data->devices)
        out += base::strFormat("gpu %x\n", d.user_gpu_id);
    for (const kfd_criu_bo_bucket& b : data->bos) {
        out += base::strFormat("bo %llx %llu %llx %x %x\n", static_cast<unsigned long long>(b.addr),
                               static_cast<unsigned long long>(b.size),
                               static_cast<unsigned long long>(b.offset), b.alloc_flags, b.gpu_id);
        if (b.dmabuf_fd != kfd::kInvalidFd)
            m.kernel->close(static_cast<int>(b.dmabuf_fd));
    }
    out += base::strFormat("priv %zu", data->privData.size());
    for (uint8_t byte : data->privData)
        out += base::strFormat(" %02x", byte);
    return out + "\n";
}

/// A checkpoint written by the reference tool from upstream's schema and rules, of a process of
/// a machine like the one it is restored on.
struct UpstreamCheckpoint {
    explicit UpstreamCheckpoint(const std::vector<std::string>& corruption = {}) {
        std::filesystem::create_directories(images);
        source.kernel->addProcess(kPid, threeGpuProcess());
        testsupport::writeFile(source.dir / "kernel-state", kernelState(source, kPid));
        std::vector<std::string> args = {"write-kfd",   images,
                                         "--sysfs",     source.settings.kfdSysfsRoot,
                                         "--kernel",    source.dir / "kernel-state",
                                         "--id",        std::to_string(kKfdId),
                                         "--render-id", std::to_string(kRenderId)};
        args.insert(args.end(), corruption.begin(), corruption.end());
        compat::ToolRun run = runUpstream(args);
        EXPECT_EQ(run.status, 0) << run.output;
    }
    TestMachine source{machineSpec(kGpus)};
    std::string images = source.dir / "upstream-images";
};

/// Restores the checkpoint in `store` on `dst` as criu does, up to RESUME; the first error.
base::Result<void> restoreAll(TestMachine& dst, formats::ImageStore& store, int pid) {
    dst.kernel->setCurrentPid(pid);
    auto dev = dst.device(&store);
    for (uint32_t id = kKfdId; id < kRenderId + kGpus; ++id) {
        HAL_TRY_ASSIGN(bool mine, dev->ownsImage(id));
        if (!mine)
            return base::makeError(base::ErrorCode::NotFound, "file id %u is not the kfd backend's",
                                   id);
        HAL_TRY(dev->restoreFile(id));
    }
    HAL_TRY(dev->resumeProcess(pid));
    return dev->finishRestore(true);
}

/// Writes the restored VRAM/GTT contents as RESTORED/bo-<i>.bin for verify-restored.
void writeRestored(const FakeProcess& q, const std::string& dir) {
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < q.bos.size(); ++i)
        if (kfd::boHasContents(q.bos[i]->allocFlags))
            compat::writeBytes(dir, "bo-" + std::to_string(i) + ".bin", q.bos[i]->data.data(),
                               q.bos[i]->data.size());
}

void expectRestoredIdentically(UpstreamCheckpoint& up, TestMachine& dst, int pid) {
    FakeProcess* q = dst.kernel->process(pid);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(q->resumed);
    EXPECT_EQ(q->objects, up.source.kernel->process(kPid)->objects);
    std::string restored = dst.dir / "restored";
    writeRestored(*q, restored);
    compat::ToolRun run =
        runUpstream({"verify-restored", up.images, restored, std::to_string(kKfdId)});
    EXPECT_EQ(run.status, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("compared: 5 BOs"));
}

TEST(KfdCompat, UpstreamsCheckpointRestoresWithIdenticalContents) {
    UpstreamCheckpoint up;
    auto store = formats::openDirectoryStore(up.images).value();
    TestMachine dst(machineSpec(kGpus));
    auto r = restoreAll(dst, *store, 777);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    expectRestoredIdentically(up, dst, 777);
}

TEST(KfdCompat, UpstreamsCheckpointThroughTheStreamerRestoresWithIdenticalContents) {
    UpstreamCheckpoint up;
    TestMachine dst(machineSpec(kGpus));
    std::string sockets = dst.dir / "sockets";
    std::filesystem::create_directories(sockets);
    auto session = testsupport::StreamerSession::start(sockets, testsupport::StreamerMode::Serve,
                                                       testsupport::readDirectoryFiles(up.images));
    ASSERT_TRUE(session.ok()) << session.error().describe();
    auto r = restoreAll(dst, *(*session)->store, 777);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    auto unread = (*session)->finish();
    ASSERT_TRUE(unread.ok()) << unread.error().describe();
    EXPECT_TRUE(unread->empty()) << unread->begin()->first << " was never read";
    expectRestoredIdentically(up, dst, 777);
}

/// A corruption the writer makes, and what the restore must say.
struct UpstreamCorruption {
    const char* name;
    std::vector<std::string> writerArgs;
    const char* message;
};

void PrintTo(const UpstreamCorruption& c, std::ostream* os) {
    *os << c.name;
}

class KfdCompatCorruptedUpstreamCheckpoint
    : public ::testing::TestWithParam<std::tuple<UpstreamCorruption, bool>> {};

TEST_P(KfdCompatCorruptedUpstreamCheckpoint, RestoreFailsSayingWhy) {
    const auto& [corruption, streamed] = GetParam();
    UpstreamCheckpoint up(corruption.writerArgs);
    TestMachine dst(machineSpec(kGpus));
    base::Result<void> r = base::success();
    if (streamed) {
        std::string sockets = dst.dir / "sockets";
        std::filesystem::create_directories(sockets);
        auto session = testsupport::StreamerSession::start(
            sockets, testsupport::StreamerMode::Serve, testsupport::readDirectoryFiles(up.images));
        ASSERT_TRUE(session.ok()) << session.error().describe();
        r = restoreAll(dst, *(*session)->store, 777);
        ASSERT_TRUE((*session)->finish().ok());
    } else {
        auto store = formats::openDirectoryStore(up.images).value();
        r = restoreAll(dst, *store, 777);
    }
    ASSERT_FALSE(r.ok()) << "restored a corrupt checkpoint";
    EXPECT_THAT(r.error().describe(), HasSubstr(corruption.message));
}

INSTANTIATE_TEST_SUITE_P(
    Each, KfdCompatCorruptedUpstreamCheckpoint,
    ::testing::Combine(::testing::Values(
                           UpstreamCorruption{
                               "HeaderNotTheSumOfTheBos",
                               {"--corrupt", "header-mismatch", "--gpu", "1111"},
                               "amdgpu-pages-10-1111.img does not belong to its image"},
                           UpstreamCorruption{"PagesFileWithoutHeader",
                                              {"--corrupt", "no-header", "--gpu", "1000"},
                                              "amdgpu-pages-10-1000.img"},
                           UpstreamCorruption{"MissingFileOfAGpuWithoutBos",
                                              {"--corrupt", "missing-gpu-file", "--gpu", "1222"},
                                              "the BO contents of GPU 0x1222 are missing"},
                           UpstreamCorruption{"ExtraByteAfterTheBos",
                                              {"--corrupt", "extra-byte", "--gpu", "1000"},
                                              "amdgpu-pages-10-1000.img is too long"}),
                       ::testing::Bool()),
    [](const auto& info) {
        return std::string(std::get<0>(info.param).name) +
               (std::get<1>(info.param) ? "_Streamed" : "_Directory");
    });

} // namespace
