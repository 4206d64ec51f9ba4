// mockgpu-workload: a sample GPU program on the mock GPU. Its computation's state lives only in
// GPU buffers; queues do the work between steps; the last line is "checksum <hex>", which depends
// only on the arguments, so a run checkpointed and restored in the middle prints the same one.

#include "check.h"
#include "cmdline/program.h"
#include "cmdline/value_options.h"
#include "content/stream.h"
#include "mockgpu/client.h"
#include "ranks.h"
#include "result.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using workload::check;

struct Options {
    std::string root;
    std::string devDir; ///< the device directory this process sees ("" = every GPU of the root)
    unsigned gpus = 1;
    unsigned buffers = 4;
    uint64_t size = 1 << 20;
    unsigned steps = 20;
    unsigned stepMs = 100;
    bool fork = false;
    unsigned ranks = 0;
    std::string shareBy = "scm";
    std::string shape = "training";
    std::string result;   ///< also write the checksum line to this file at the end
    unsigned holdMs = 0;  ///< after the checksum line, keep the GPUs this long before closing them
    std::string stopFile; ///< stop stepping once this file exists ("": run every step)
};

/// What a step does to each buffer under `--shape`.
enum class BufferRole { Rewritten, Static, Zero };

/// Buffer `b` of `buffers` under `shape`: "training" rewrites every buffer at every step;
/// "inference" keeps the first 60% static after their fill (weights), leaves the next 30% never
/// written (zeros: an allocator's pool) and rewrites the rest (at least one) at every step.
BufferRole roleOf(const std::string& shape, unsigned b, unsigned buffers) {
    if (shape != "inference")
        return BufferRole::Rewritten;
    unsigned rewritten = std::max(1u, buffers - buffers * 6 / 10 - buffers * 3 / 10);
    unsigned statics = std::min(buffers - rewritten, buffers * 6 / 10);
    if (b < statics)
        return BufferRole::Static;
    return b < buffers - rewritten ? BufferRole::Zero : BufferRole::Rewritten;
}

/// Declares the options of the program on `program`'s root, stored into `o`.
void addOptions(cmdline::Program& program, Options& o) {
    cmdline::Command app = program.root();
    app.addOption("--root", o.root, "the mock GPU machine ('criu-amdgpu mock init' makes one)")
        .typeName("DIR")
        .required();
    app.addOption("--dev-dir", o.devDir,
                  "use only the mock GPUs whose device nodes (kfd, dri/renderD<minor>) this "
                  "process sees in DIR, in topology order, as a container given some of the "
                  "node's GPUs sees them in /dev")
        .typeName("DIR");
    cmdline::addNumberOption(app, "--gpus", &o.gpus, 1, UINT32_MAX, "N", "mock GPUs to use");
    cmdline::addNumberOption(app, "--buffers", &o.buffers, 1, UINT32_MAX, "B",
                             "buffers on each GPU");
    cmdline::addSizeOption(app, "--size", &o.size, "BYTES",
                           "the size of each buffer, a multiple of 8, with an optional suffix K, "
                           "M or G");
    cmdline::addNumberOption(app, "--steps", &o.steps, 0, UINT32_MAX, "S", "steps to run");
    cmdline::addNumberOption(app, "--step-ms", &o.stepMs, 0, UINT32_MAX, "MS",
                             "milliseconds to sleep after each step");
    app.addFlag("--fork", o.fork,
                "run a second copy in a child process that uses its own GPU contexts");
    cmdline::addNumberOption(app, "--ranks", &o.ranks, 0, 64, "N",
                             "run as N processes, one per GPU (rank r on GPU r % --gpus), that "
                             "share GPU memory and all-reduce through it at every step, as "
                             "torchrun runs a training job; 0: one process");
    app.addOption("--share-by", o.shareBy,
                  "how ranks hand each other their GPU buffers: scm (dma-buf fds over a unix "
                  "socket) or pidfd (pidfd_getfd from the peer)")
        .typeName("HOW")
        .oneOf({"scm", "pidfd"});
    app.addOption("--shape", o.shape,
                  "what each step writes: training (every buffer) or inference (60% of the "
                  "buffers weights written once, bf16-shaped, 30% never written, the rest "
                  "rewritten at every step)")
        .typeName("SHAPE")
        .oneOf({"training", "inference"});
    app.addOption("--result", o.result,
                  "also write the checksum line to FILE (opened only at the end)")
        .typeName("FILE");
    cmdline::addNumberOption(app, "--hold-ms", &o.holdMs, 0, UINT32_MAX, "MS",
                             "after the checksum line, keep the GPUs (contexts, queues, buffers) "
                             "MS milliseconds more before closing them and exiting, so a test can "
                             "look at the process's GPU state once it has finished; not with "
                             "--fork or --ranks");
    app.addOption("--stop-file", o.stopFile,
                  "after each step, stop stepping once FILE exists and finish as a run of the "
                  "steps done (it prints 'workload: stopped after step N', and writes that "
                  "line to --result FILE too: --steps N gives the same checksum), so a test can "
                  "end a run of unknown length. With --fork each process stops after its own "
                  "step and says so ('parent: stopped after step N', 'child: ...'); ranks stop "
                  "together after the step the launcher sees FILE at ('rank R: ...'). Each "
                  "process's 'WHO checksum' line then equals its line in a run of --steps N")
        .typeName("FILE");
}

struct Gpu {
    int fd = -1;
    uint32_t queue = 0;
    uint32_t event = 0;
    std::vector<uint32_t> buffers;
};

/// Writes `size` bytes shaped like bf16 weights into BO `bo`: values of small magnitude (so the
/// exponent bytes repeat, as in a trained model's weights), from a seed.
void writeWeights(int fd, uint32_t bo, uint64_t size, uint64_t seed) {
    std::vector<std::byte> chunk(64 * 1024);
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint64_t off = 0; off < size; off += chunk.size()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - off));
        for (size_t i = 0; i + 1 < n; i += 2) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17; // xorshift64
            // sign, exponent 0x78..0x7b (|w| in about [2^-7, 2^-3)), 7 bits of mantissa
            uint16_t bf16 = static_cast<uint16_t>(
                ((state >> 63) << 15) | ((0x78 + ((state >> 8) & 3)) << 7) | (state & 0x7f));
            chunk[i] = static_cast<std::byte>(bf16 & 0xff);
            chunk[i + 1] = static_cast<std::byte>(bf16 >> 8);
        }
        check(mock::writeBo(fd, bo, off, std::span(chunk).first(n)), "writing weights");
    }
}

/// Runs the computation with seeds offset by `variant`; returns its checksum. `atEnd`, when set,
/// is called with the checksum while the GPUs are still open; `stoppedAfter`, when set, receives
/// the step after which --stop-file ended the run (0 when it ran all its steps).
uint64_t runComputation(const Options& o, uint64_t variant, const char* who,
                        const std::function<void(uint64_t)>& atEnd = {},
                        uint32_t* stoppedAfter = nullptr) {
    std::vector<Gpu> gpus(o.gpus);
    const uint64_t stride = (o.size + 0xffff) & ~uint64_t(0xffff);
    for (unsigned g = 0; g < o.gpus; ++g) {
        Gpu& gpu = gpus[g];
        gpu.fd = check(mock::openDevice(o.root, g, o.devDir), "opening the mock GPU");
        gpu.queue = check(mock::createQueue(gpu.fd), "creating a queue");
        gpu.event = check(mock::createEvent(gpu.fd), "creating an event");
        for (unsigned b = 0; b < o.buffers; ++b) {
            uint64_t va = 0x100000000ull + b * stride;
            gpu.buffers.push_back(check(mock::allocBo(gpu.fd, o.size, 1, va), "allocating"));
            BufferRole role = roleOf(o.shape, b, o.buffers);
            if (role == BufferRole::Zero)
                continue;
            if (role == BufferRole::Static) {
                writeWeights(gpu.fd, gpu.buffers.back(), o.size,
                             (variant << 40) ^ (uint64_t(g) << 20) ^ b);
                continue;
            }
            mock::Command fill{mock::Command::Op::Fill, gpu.buffers.back(), 0,
                               (variant << 40) ^ (uint64_t(g) << 20) ^ b};
            check(mock::submit(gpu.fd, gpu.queue, fill, gpu.event), "filling a buffer");
        }
        auto state = check(mock::queryContext(gpu.fd), "querying the GPU");
        printf("%s: GPU %u is gpu_id 0x%04x\n", who, g, state.userGpuId);
    }
    fflush(stdout);
    unsigned rewritten = 0; // the buffers filled and then rewritten by the GPU's queue
    for (unsigned b = 0; b < o.buffers; ++b)
        rewritten += roleOf(o.shape, b, o.buffers) == BufferRole::Rewritten;
    uint64_t expected = rewritten;
    for (unsigned step = 1; step <= o.steps; ++step) {
        for (unsigned g = 0; g < o.gpus; ++g) {
            Gpu& gpu = gpus[g];
            for (unsigned b = 0; b < o.buffers; ++b) {
                if (roleOf(o.shape, b, o.buffers) != BufferRole::Rewritten)
                    continue;
                mock::Command mix{mock::Command::Op::Mix, gpu.buffers[b],
                                  gpu.buffers[(b + 1) % o.buffers], step};
                check(mock::submit(gpu.fd, gpu.queue, mix, gpu.event), "running a step");
            }
            auto state = check(mock::queryContext(gpu.fd), "querying the GPU");
            const mock::Queue* q = state.findQueue(gpu.queue);
            if (!q || q->completed != expected + rewritten) {
                fprintf(stderr,
                        "%s: GPU %u lost its state: queue completed %llu commands, "
                        "expected %llu\n",
                        who, g, q ? static_cast<unsigned long long>(q->completed) : 0ull,
                        static_cast<unsigned long long>(expected + rewritten));
                exit(1);
            }
        }
        expected += rewritten;
        printf("%s: step %u/%u\n", who, step, o.steps);
        if (!o.stopFile.empty() && access(o.stopFile.c_str(), F_OK) == 0) {
            printf("%s: stopped after step %u\n", who, step);
            if (stoppedAfter)
                *stoppedAfter = step;
            fflush(stdout);
            break;
        }
        fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(o.stepMs));
    }
    content::Fnv1a64 digest;
    std::vector<std::byte> chunk(64 * 1024);
    for (Gpu& gpu : gpus) {
        for (uint32_t bo : gpu.buffers) {
            for (uint64_t off = 0; off < o.size; off += chunk.size()) {
                size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), o.size - off));
                check(mock::readBo(gpu.fd, bo, off, std::span(chunk).first(n)), "reading back");
                digest.update(std::span(chunk).first(n));
            }
        }
    }
    if (atEnd)
        atEnd(digest.value());
    for (Gpu& gpu : gpus)
        check(mock::closeDevice(gpu.fd), "closing the GPU");
    return digest.value();
}

/// Prints the checksum lines of the run (its `parts`' and the whole run's `sum`), and writes them
/// to --result FILE when given, after the steps the run or its parts were stopped at
/// (`stoppedAfter`, each part's own, when not 0).
int finish(const Options& o, uint64_t sum, uint32_t stoppedAfter = 0,
           const std::vector<workload::ProcessResult>& parts = {}) {
    printf("%s", workload::endLines(sum, stoppedAfter, parts, false).c_str());
    fflush(stdout);
    if (!o.result.empty() &&
        !workload::writeWhole(o.result, workload::endLines(sum, stoppedAfter, parts, true))) {
        fprintf(stderr, "mockgpu-workload: writing the result file %s: %s\n", o.result.c_str(),
                strerror(errno));
        return 1;
    }
    return 0;
}

/// The checksum of a run of several processes: that of their checksums in order.
uint64_t combined(const std::vector<workload::ProcessResult>& parts) {
    content::Fnv1a64 digest;
    for (const workload::ProcessResult& p : parts)
        digest.update(std::as_bytes(std::span(&p.end.checksum, 1)));
    return digest.value();
}

/// Runs the workload of `o` to its end; returns the exit status.
int run(const Options& o) {
    if (o.ranks) {
        workload::RankOptions r;
        r.root = o.root;
        r.devDir = o.devDir;
        r.ranks = o.ranks;
        r.gpus = o.gpus;
        r.size = o.size;
        r.steps = o.steps;
        r.stepMs = o.stepMs;
        r.shareBy = o.shareBy == "pidfd" ? workload::ShareBy::Pidfd : workload::ShareBy::Scm;
        r.stopFile = o.stopFile;
        int failed = 0;
        std::vector<workload::ProcessResult> ranks = workload::runRanks(r, failed);
        if (failed) {
            fprintf(stderr, "mockgpu-workload: a rank failed\n");
            return 1;
        }
        return finish(o, combined(ranks), 0, ranks);
    }
    if (!o.fork) {
        int status = 0;
        uint32_t stoppedAfter = 0;
        runComputation(
            o, 0, "workload",
            [&](uint64_t sum) {
                status = finish(o, sum, stoppedAfter);
                std::this_thread::sleep_for(std::chrono::milliseconds(o.holdMs));
            },
            &stoppedAfter);
        return status;
    }
    int pipeFds[2];
    if (pipe(pipeFds) != 0) {
        perror("mockgpu-workload: pipe");
        return 1;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("mockgpu-workload: fork");
        return 1;
    }
    if (child == 0) {
        close(pipeFds[0]);
        workload::ProcessEnd end;
        end.checksum = runComputation(o, 1, "child", {}, &end.stoppedAfter);
        ssize_t n = write(pipeFds[1], &end, sizeof(end));
        workload::endChild(n == sizeof(end) ? 0 : 1);
    }
    close(pipeFds[1]);
    std::vector<workload::ProcessResult> parts(2);
    parts[0].who = "parent";
    parts[0].end.checksum = runComputation(o, 0, "parent", {}, &parts[0].end.stoppedAfter);
    parts[1].who = "child";
    ssize_t n = read(pipeFds[0], &parts[1].end, sizeof(parts[1].end));
    int status = 0;
    waitpid(child, &status, 0);
    if (n != sizeof(parts[1].end) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "mockgpu-workload: the child computation failed\n");
        return 1;
    }
    return finish(o, combined(parts), 0, parts);
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    cmdline::Program program(
        "mockgpu-workload", "A sample GPU program on the mock GPU.",
        "Runs S steps of a computation whose state lives in B buffers of BYTES bytes on each of "
        "N mock GPUs, sleeping MS milliseconds after each step. It prints 'checksum <hex>' last; "
        "the checksum depends only on the arguments, so a run checkpointed and restored in the "
        "middle prints the same one as an uninterrupted run.");
    addOptions(program, o);
    program.onRun(program.root(), [&o] {
        if (o.size % 8) {
            fprintf(stderr, "mockgpu-workload: --size: %llu is not a multiple of 8\n",
                    static_cast<unsigned long long>(o.size));
            return cmdline::kExitBadArguments;
        }
        if (o.holdMs && (o.ranks || o.fork)) {
            fprintf(stderr,
                    "mockgpu-workload: --hold-ms is for a single process (no --fork or --ranks)\n");
            return cmdline::kExitBadArguments;
        }
        if (o.ranks && o.fork) {
            fprintf(stderr, "mockgpu-workload: --fork and --ranks exclude each other\n");
            return cmdline::kExitBadArguments;
        }
        if (o.ranks && o.shape != "training") {
            fprintf(stderr, "mockgpu-workload: --shape %s: ranks run the training shape only\n",
                    o.shape.c_str());
            return cmdline::kExitBadArguments;
        }
        return run(o);
    });
    return program.run(argc, argv);
}
