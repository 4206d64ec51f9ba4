#include "ranks.h"

#include "check.h"
#include "mockgpu/client.h"

#include "content/stream.h"
#include "coordination/fd_message.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace workload {
namespace {

/// What a rank tells the launcher of its exported buffer; the launcher tells every rank all of
/// them, in rank order.
struct Export {
    int32_t pid = 0; ///< the rank, as this pid namespace numbers it (for pidfd_getfd)
    int32_t fd = -1; ///< its dma-buf fd, in the rank
};

constexpr char kBarrier = 'B';
constexpr char kImported = 'I';
constexpr char kGo = 'G';
constexpr char kStop = 'S'; ///< the launcher's answer to a step's last barrier: stop after it
constexpr uint64_t kWorkVa = 0x100000000ull;

/// The GPU VA of the buffer of `rank` in every rank: its own at kWorkVa + size, peers' after.
uint64_t commVa(uint64_t stride, unsigned rank) {
    return kWorkVa + stride * (1 + rank);
}

void sendByte(int sock, char c, const char* what) {
    check(coordination::sendFdMessage(sock, &c, 1, {}, what), what);
}

char receiveByte(int sock, const char* what) {
    auto m = check(coordination::receiveFdMessage(sock, 1, what), what);
    for (int fd : m.fds)
        close(fd);
    if (m.end || m.bytes.size() != 1) {
        fprintf(stderr, "mockgpu-workload[%d]: %s: the peer %s\n", getpid(), what,
                m.end ? "went away" : "sent something unexpected");
        exit(1);
    }
    return m.bytes[0];
}

/// The fd of peer buffer `e`, taken from the peer itself (pidfd_getfd).
int takeFromPeer(const Export& e) {
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, e.pid, 0));
    if (pidfd < 0) {
        perror("mockgpu-workload: pidfd_open of a peer rank");
        exit(1);
    }
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, e.fd, 0));
    int err = errno;
    close(pidfd);
    if (fd < 0) {
        errno = err;
        perror("mockgpu-workload: pidfd_getfd of a peer rank's dma-buf");
        exit(1);
    }
    return fd;
}

/// One rank: sets up its GPU and the shared buffers, runs the steps until the last or until the
/// launcher says stop; returns its result's checksum and the step it stopped after.
ProcessEnd runRank(const RankOptions& o, unsigned rank, int sock) {
    char who[32];
    snprintf(who, sizeof(who), "rank %u", rank);
    const uint64_t stride = (o.size + 0xffff) & ~uint64_t(0xffff);
    int gpu = check(mock::openDevice(o.root, rank % o.gpus, o.devDir), "opening the mock GPU");
    uint32_t queue = check(mock::createQueue(gpu), "creating a queue");
    uint32_t event = check(mock::createEvent(gpu), "creating an event");
    auto run = [&](mock::Command c, const char* what) {
        check(mock::submit(gpu, queue, c, event), what);
    };
    uint32_t work = check(mock::allocBo(gpu, o.size, 1, kWorkVa), "allocating");
    uint32_t own = check(mock::allocBo(gpu, o.size, 1, commVa(stride, rank)), "allocating");
    run({mock::Command::Op::Fill, work, 0, (uint64_t(rank) << 32) | 1}, "filling a buffer");
    run({mock::Command::Op::Fill, own, 0, (uint64_t(rank) << 32) | 2}, "filling a buffer");

    // Hand the communication buffer to the peers, and take theirs.
    int exported = check(mock::exportBo(gpu, own), "exporting the communication buffer");
    Export mine{getpid(), exported};
    check(coordination::sendFdMessage(sock, &mine, sizeof(mine), std::span(&exported, 1),
                                      "sending the exported buffer to the launcher"),
          "sharing");
    auto all = check(coordination::receiveFdMessage(sock, sizeof(Export) * o.ranks,
                                                    "the peers' buffers from the launcher"),
                     "sharing");
    if (all.bytes.size() != sizeof(Export) * o.ranks ||
        (o.shareBy == ShareBy::Scm && all.fds.size() != o.ranks)) {
        fprintf(stderr, "mockgpu-workload[%d]: %s: the launcher sent %zu bytes and %zu fds\n",
                getpid(), who, all.bytes.size(), all.fds.size());
        exit(1);
    }
    std::vector<uint32_t> comm(o.ranks);
    for (unsigned k = 0; k < o.ranks; ++k) {
        if (k == rank) {
            comm[k] = own;
            continue;
        }
        Export e;
        memcpy(&e, all.bytes.data() + k * sizeof(Export), sizeof(e));
        int dmabuf = o.shareBy == ShareBy::Scm ? all.fds[k] : takeFromPeer(e);
        comm[k] = check(mock::importBo(gpu, dmabuf, commVa(stride, k)), "importing a peer buffer");
        if (o.shareBy == ShareBy::Pidfd)
            close(dmabuf);
    }
    for (int fd : all.fds)
        close(fd);
    // The peers may still be taking this rank's dma-buf from it: keep it until all imported.
    sendByte(sock, kImported, "telling the launcher the peers' buffers are imported");
    if (receiveByte(sock, "waiting for every rank to import") != kGo) {
        fprintf(stderr, "mockgpu-workload[%d]: %s: the launcher did not say go\n", getpid(), who);
        exit(1);
    }
    close(exported);
    printf("%s: GPU %u, sharing with %u peers\n", who, rank % o.gpus, o.ranks - 1);
    fflush(stdout);
    ProcessEnd result;

    for (unsigned step = 1; step <= o.steps; ++step) {
        run({mock::Command::Op::Mix, own, work, step}, "contributing to the all-reduce");
        sendByte(sock, kBarrier, "the barrier");
        receiveByte(sock, "the barrier");
        for (unsigned k = 0; k < o.ranks; ++k)
            run({mock::Command::Op::Mix, work, comm[k], uint64_t(step) * o.ranks + k},
                "reducing a peer's buffer");
        sendByte(sock, kBarrier, "the barrier");
        char next = receiveByte(sock, "the barrier");
        printf("%s: step %u/%u\n", who, step, o.steps);
        if (next == kStop) {
            printf("%s: stopped after step %u\n", who, step);
            result.stoppedAfter = step;
            fflush(stdout);
            break;
        }
        if (next != kBarrier) {
            fprintf(stderr, "mockgpu-workload[%d]: %s: the launcher is out of step\n", getpid(),
                    who);
            exit(1);
        }
        fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(o.stepMs));
    }
    content::Fnv1a64 digest;
    std::vector<std::byte> chunk(64 * 1024);
    for (uint64_t off = 0; off < o.size; off += chunk.size()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), o.size - off));
        check(mock::readBo(gpu, work, off, std::span(chunk).first(n)), "reading back");
        digest.update(std::span(chunk).first(n));
    }
    check(mock::closeDevice(gpu), "closing the GPU");
    result.checksum = digest.value();
    return result;
}

/// Waits for one message from every rank (a barrier's arrivals), then answers each with `reply`.
void gather(const std::vector<int>& socks, char expected, char reply) {
    for (int s : socks)
        if (receiveByte(s, "a rank") != expected) {
            fprintf(stderr, "mockgpu-workload: a rank is out of step\n");
            exit(1);
        }
    for (int s : socks)
        sendByte(s, reply, "answering a rank");
}

} // namespace

std::vector<ProcessResult> runRanks(const RankOptions& o, int& failed) {
    failed = 0;
    std::vector<int> socks;
    std::vector<pid_t> children;
    fflush(stdout);
    for (unsigned r = 0; r < o.ranks; ++r) {
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
            perror("mockgpu-workload: socketpair");
            exit(1);
        }
        pid_t child = fork();
        if (child < 0) {
            perror("mockgpu-workload: fork");
            exit(1);
        }
        if (child == 0) {
            for (int s : socks)
                close(s);
            close(pair[0]);
            ProcessEnd end = runRank(o, r, pair[1]);
            auto sent =
                coordination::sendFdMessage(pair[1], &end, sizeof(end), {}, "the rank's result");
            endChild(sent.ok() ? 0 : 1);
        }
        close(pair[1]);
        socks.push_back(pair[0]);
        children.push_back(child);
    }
    // Every rank's buffer to every rank.
    std::vector<Export> exports(o.ranks);
    std::vector<int> fds(o.ranks, -1);
    for (unsigned r = 0; r < o.ranks; ++r) {
        auto m = check(coordination::receiveFdMessage(socks[r], sizeof(Export), "a rank's buffer"),
                       "collecting the ranks' buffers");
        if (m.bytes.size() != sizeof(Export) || m.fds.size() != 1) {
            fprintf(stderr, "mockgpu-workload: rank %u sent no buffer\n", r);
            exit(1);
        }
        memcpy(&exports[r], m.bytes.data(), sizeof(Export));
        fds[r] = m.fds[0];
    }
    for (int s : socks)
        check(coordination::sendFdMessage(s, exports.data(), sizeof(Export) * exports.size(),
                                          o.shareBy == ShareBy::Scm ? std::span<const int>(fds)
                                                                    : std::span<const int>(),
                                          "handing the ranks' buffers out"),
              "handing the ranks' buffers out");
    for (int fd : fds)
        close(fd);
    gather(socks, kImported, kGo);
    for (unsigned step = 1; step <= o.steps; ++step) {
        gather(socks, kBarrier, kBarrier);
        bool stop = !o.stopFile.empty() && access(o.stopFile.c_str(), F_OK) == 0;
        gather(socks, kBarrier, stop ? kStop : kBarrier);
        if (stop)
            break;
    }
    std::vector<ProcessResult> results(o.ranks);
    for (unsigned r = 0; r < o.ranks; ++r) {
        results[r].who = "rank " + std::to_string(r);
        auto m = coordination::receiveFdMessage(socks[r], sizeof(ProcessEnd), "a rank's result");
        if (!m.ok() || m->bytes.size() != sizeof(ProcessEnd)) {
            fprintf(stderr, "mockgpu-workload: rank %u ended without its result\n", r);
            failed = 1;
        } else {
            memcpy(&results[r].end, m->bytes.data(), sizeof(ProcessEnd));
        }
    }
    for (pid_t child : children) {
        int status = 0;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    for (int s : socks)
        close(s);
    return results;
}

} // namespace workload
