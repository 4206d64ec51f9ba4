#include "mockgpu/reaper.h"

#include "mockgpu/context.h"
#include "mockgpu/machine.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace mock {
namespace {

/// The (device, inode) of every file that any process holds open and that is a character device
/// with the mock nodes' numbers.
std::set<std::pair<dev_t, ino_t>> heldMockNodes(dev_t rdev) {
    std::set<std::pair<dev_t, ino_t>> held;
    DIR* proc = opendir("/proc");
    if (!proc)
        return held;
    while (struct dirent* p = readdir(proc)) {
        char* end = nullptr;
        long pid = strtol(p->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        std::string fdDir = std::string("/proc/") + p->d_name + "/fd";
        DIR* fds = opendir(fdDir.c_str());
        if (!fds)
            continue; // exited while we looked
        while (struct dirent* f = readdir(fds)) {
            if (f->d_name[0] == '.')
                continue;
            struct stat st {};
            // stat follows the fd's link to the file itself, whatever mount namespace the
            // holder sees it in.
            if (stat((fdDir + "/" + f->d_name).c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
                st.st_rdev == rdev)
                held.emplace(st.st_dev, st.st_ino);
        }
        closedir(fds);
    }
    closedir(proc);
    return held;
}

/// Whether the criu of restore `session` still runs (a killed criu's half-restored contexts
/// are freed like any other once no process holds them).
bool restoreRuns(uint64_t session) {
    int criu = restoringCriuOf(session);
    return criu > 0 && (kill(criu, 0) == 0 || errno == EPERM);
}

} // namespace

bool seesEveryProcess() {
    // The initial pid namespace has a fixed inode number (PROC_PID_INIT_INO).
    constexpr ino_t kInitialPidNamespace = 0xEFFFFFFCu;
    struct stat st {};
    return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == kInitialPidNamespace;
}

base::Result<size_t> reapOrphanedContexts(const std::string& root) {
    if (!seesEveryProcess())
        return size_t{0};
    HAL_TRY_ASSIGN(MachineConfig cfg, readMachineConfig(root));
    removeUnfinishedContexts(root, 0, true);
    HAL_TRY_ASSIGN(auto contexts, listContexts(root));
    if (contexts.empty())
        return size_t{0};
    // First the contexts no restore still makes, each locked; only then the nodes processes
    // hold. The other order lost a context restored at that moment: its process had not opened
    // it yet when the nodes were listed, and its criu had ended when the restore was asked
    // (bench.load: a restored process found its context gone). A restore that has ended has
    // handed its process every node it restored.
    struct Candidate {
        const Context* ctx;
        int renderMinor;
        std::unique_ptr<ContextLock> lock;
    };
    std::vector<Candidate> candidates;
    for (const Context& ctx : contexts) {
        auto lock = std::make_unique<ContextLock>();
        if (!lock->acquire(ctx.dir(), 0).ok())
            continue; // inside a driver call, or being created
        auto s = ctx.load();
        if (!s.ok() || (s->restoreSession != 0 && restoreRuns(s->restoreSession)))
            continue; // unreadable, or left to its restore
        candidates.push_back({&ctx, s->renderMinor, std::move(lock)});
    }
    if (candidates.empty())
        return size_t{0};
    auto held = heldMockNodes(cfg.deviceRdev);
    size_t reaped = 0;
    for (Candidate& c : candidates) {
        struct stat st {};
        if (stat(c.ctx->nodePath(c.renderMinor).c_str(), &st) == 0 &&
            held.count({st.st_dev, st.st_ino}))
            continue;
        c.lock->release();
        c.ctx->destroy();
        ++reaped;
    }
    return reaped;
}

} // namespace mock
