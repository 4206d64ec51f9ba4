#include "fault_sweep.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace faultsweep {

int FaultPlan::enter(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t index = calls_.size();
    calls_.push_back(name);
    if (index != target_)
        return 0;
    fired_ = true;
    firedName_ = name;
    return -err_;
}

void FaultPlan::failAt(size_t index, int err) {
    std::lock_guard<std::mutex> lock(mu_);
    target_ = index;
    err_ = err;
}

size_t FaultPlan::target() const {
    std::lock_guard<std::mutex> lock(mu_);
    return target_;
}

int FaultPlan::error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return err_;
}

void FaultPlan::record(const std::string& name, bool failed) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(name);
    if (failed) {
        fired_ = true;
        firedName_ = name;
    }
}

std::vector<std::string> FaultPlan::calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
}

bool FaultPlan::fired() const {
    std::lock_guard<std::mutex> lock(mu_);
    return fired_;
}

std::string FaultPlan::firedName() const {
    std::lock_guard<std::mutex> lock(mu_);
    return firedName_;
}

bool sweepAll() {
    const char* v = std::getenv("FAULT_SWEEP");
    return v && std::string(v) == "all";
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULT_SWEEP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAULT_SWEEP_SANITIZED 1
#endif
#endif

/// A sanitized build runs the tests several times slower: its sample is a quarter of the calls
/// (still the first of each kind).
#ifdef FAULT_SWEEP_SANITIZED
constexpr size_t kStrideFactor = 4;
#else
constexpr size_t kStrideFactor = 1;
#endif

std::vector<size_t> sampleCalls(const std::vector<std::string>& calls, size_t stride, bool all) {
    std::vector<size_t> out;
    if (stride > 1)
        stride *= kStrideFactor;
    if (all || stride <= 1) {
        for (size_t i = 0; i < calls.size(); ++i)
            out.push_back(i);
        return out;
    }
    // A run of the same call (the render-node backend asks each context and syncobj number from
    // 1 up to 4,096 past the last one found: thousands of QUERY_STATE2 calls) counts by its two
    // ends; the stride runs over the calls so counted.
    std::set<std::string> kinds;
    size_t candidate = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
        bool first = kinds.insert(calls[i]).second;
        bool runEdge =
            i == 0 || i + 1 == calls.size() || calls[i - 1] != calls[i] || calls[i + 1] != calls[i];
        if (!runEdge)
            continue;
        if (candidate++ % stride == 0 || first)
            out.push_back(i);
    }
    return out;
}

std::vector<int> commonErrnos() {
    return {EIO, ENOMEM, EINTR, EAGAIN, EFAULT};
}

std::vector<std::string> callWords(const std::string& call) {
    std::vector<std::string> words{call};
    size_t open = call.find('(');
    if (call.rfind("ioctl ", 0) == 0) {
        std::string request =
            call.substr(6, open == std::string::npos ? std::string::npos : open - 6);
        words.push_back(request);
        for (const char* prefix : {"DRM_IOCTL_AMDGPU_", "DRM_IOCTL_", "AMDKFD_IOC_"})
            if (request.rfind(prefix, 0) == 0)
                words.push_back(request.substr(std::strlen(prefix)));
        if (open != std::string::npos)
            words.push_back(call.substr(open + 1, call.size() - open - 2));
    }
    return words;
}

std::string ioctlName(unsigned long request) {
    unsigned type = _IOC_TYPE(request), nr = _IOC_NR(request);
    static const std::map<unsigned, const char*> kDrm = {
        {0x00, "DRM_IOCTL_VERSION"},
        {0x09, "DRM_IOCTL_GEM_CLOSE"},
        {0x2d, "DRM_IOCTL_PRIME_HANDLE_TO_FD"},
        {0x2e, "DRM_IOCTL_PRIME_FD_TO_HANDLE"},
        {0xbf, "DRM_IOCTL_SYNCOBJ_CREATE"},
        {0xc0, "DRM_IOCTL_SYNCOBJ_DESTROY"},
        {0xc3, "DRM_IOCTL_SYNCOBJ_WAIT"},
        {0xc5, "DRM_IOCTL_SYNCOBJ_SIGNAL"},
        {0xca, "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT"},
        {0xcb, "DRM_IOCTL_SYNCOBJ_QUERY"},
        {0xcd, "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL"},
        {0xd2, "DRM_IOCTL_GEM_CHANGE_HANDLE"},
        {0x40, "DRM_IOCTL_AMDGPU_GEM_CREATE"},
        {0x41, "DRM_IOCTL_AMDGPU_GEM_MMAP"},
        {0x42, "DRM_IOCTL_AMDGPU_CTX"},
        {0x44, "DRM_IOCTL_AMDGPU_CS"},
        {0x45, "DRM_IOCTL_AMDGPU_INFO"},
        {0x47, "DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE"},
        {0x48, "DRM_IOCTL_AMDGPU_GEM_VA"},
        {0x49, "DRM_IOCTL_AMDGPU_WAIT_CS"},
        {0x50, "DRM_IOCTL_AMDGPU_GEM_OP"},
        {0x59, "DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES"}};
    static const std::map<unsigned, const char*> kKfd = {{0x01, "AMDKFD_IOC_GET_VERSION"},
                                                         {0x1d, "AMDKFD_IOC_IMPORT_DMABUF"},
                                                         {0x22, "AMDKFD_IOC_CRIU_OP"},
                                                         {0x24, "AMDKFD_IOC_EXPORT_DMABUF"}};
    const auto& table = type == 'd' ? kDrm : kKfd;
    if (type == 'd' || type == 'K')
        if (auto it = table.find(nr); it != table.end())
            return std::string("ioctl ") + it->second;
    char hex[32];
    std::snprintf(hex, sizeof hex, "ioctl 0x%lx", request);
    return hex;
}

namespace {

bool holdsOne(const std::string& text, const std::vector<std::string>& words) {
    for (const std::string& w : words)
        if (!w.empty() && text.find(w) != std::string::npos)
            return true;
    return words.empty();
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words)
        out += (out.empty() ? "'" : " or '") + w + "'";
    return out;
}

std::string errnoName(int err) {
    const char* name = strerrorname_np(err);
    return name ? name : std::to_string(err);
}

/// What is wrong with one run's outcome ("" when nothing), and how it counts.
std::string judge(const SweepSpec& spec, const FaultPlan& plan, int err, const SweepRun& run,
                  SweepFigure& figure) {
    std::string problems;
    if (!run.leftBehind.empty()) {
        ++figure.leaked;
        for (const std::string& l : run.leftBehind)
            problems += "\n    left behind: " + l;
    }
    if (!plan.fired()) {
        ++figure.unfired;
        return problems + "\n    the call was never made (the run took another path)";
    }
    std::string call = plan.firedName();
    if (run.result.ok()) {
        if (err == EINTR || err == EAGAIN)
            ++figure.recovered;
        else
            ++figure.tolerated;
        return problems;
    }
    ++figure.failed;
    const base::Error& e = run.result.error();
    std::string text = e.describe();
    auto words = spec.wordsOf ? spec.wordsOf(call) : callWords(call);
    std::string unclear;
    if (!holdsOne(text, words))
        unclear += "\n    the error does not name the call (" + joined(words) + ")";
    if (!holdsOne(text, spec.gpuOrFile))
        unclear += "\n    the error names no GPU or file (" + joined(spec.gpuOrFile) + ")";
    if (!holdsOne(text, spec.steps))
        unclear += "\n    the error names no step (" + joined(spec.steps) + ")";
    if (e.sysErrno() != err && text.find(std::strerror(err)) == std::string::npos)
        unclear += "\n    the error carries neither " + errnoName(err) + " nor its text";
    if (!unclear.empty()) {
        ++figure.unclear;
        problems += unclear + "\n    error: " + text;
    }
    return problems;
}

/// Problems shown in full (FAULT_SWEEP_SHOW=N, default 20); the rest are counted.
int maxReported() {
    const char* v = std::getenv("FAULT_SWEEP_SHOW");
    return v ? std::atoi(v) : 20;
}

} // namespace

SweepFigure runSweep(const SweepSpec& spec) {
    SweepFigure figure;
    FaultPlan warmUp; // the first run's threads leave stacks and arenas the C library keeps
    (void)spec.run(warmUp);
    FaultPlan recording;
    SweepRun first = spec.run(recording);
    if (!first.result.ok()) {
        ADD_FAILURE() << spec.title
                      << ": the run without faults failed: " << first.result.error().describe();
        return figure;
    }
    for (const std::string& l : first.leftBehind)
        ADD_FAILURE() << spec.title << ": the run without faults left behind: " << l;
    std::vector<std::string> calls = recording.calls();
    figure.calls = calls.size();
    std::vector<size_t> sample = sampleCalls(calls, spec.stride, sweepAll());
    figure.sampled = sample.size();
    std::set<std::string> tolerated;
    int reported = 0;
    for (size_t index : sample) {
        for (int err : spec.errnosFor(calls[index])) {
            FaultPlan plan;
            plan.failAt(index, err);
            SweepRun run = spec.run(plan);
            ++figure.runs;
            std::string problems = judge(spec, plan, err, run, figure);
            if (run.result.ok() && plan.fired() && err != EINTR && err != EAGAIN)
                tolerated.insert(calls[index] + " " + errnoName(err));
            if (problems.empty())
                continue;
            if (++reported <= maxReported())
                ADD_FAILURE() << spec.title << ": call " << index << " (" << calls[index]
                              << ") failing " << errnoName(err) << ":" << problems;
        }
    }
    if (reported > maxReported())
        ADD_FAILURE() << spec.title << ": " << reported - maxReported()
                      << " more runs had problems";
    std::string tol;
    for (const std::string& t : tolerated)
        tol += (tol.empty() ? "" : ", ") + t;
    std::printf("fault sweep, %s: %zu calls recorded, %zu failed%s; %zu runs (calls x errnos): "
                "%zu failed with a clear error, %zu recovered (EINTR/EAGAIN retried), "
                "%zu tolerated, %zu left something behind, %zu unclear errors, %zu not reached\n",
                spec.title.c_str(), figure.calls, figure.sampled,
                sweepAll() ? " (FAULT_SWEEP=all)" : " (a sample; FAULT_SWEEP=all runs every one)",
                figure.runs, figure.failed, figure.recovered, figure.tolerated, figure.leaked,
                figure.unclear, figure.unfired);
    if (!tol.empty())
        std::printf("  tolerated (the run succeeded): %s\n", tol.c_str());
    std::fflush(stdout);
    return figure;
}

size_t openFdsOfThisProcess() {
    size_t n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.')
                ++n;
        closedir(d);
    }
    return n;
}

size_t mappingsOfThisProcess() {
    // Mappings of files only (a memfd, a device, a file): anonymous ones come and go with the C
    // library's thread stacks and arenas and a sanitizer's allocator, whatever the code under test
    // does, and what a backend maps of a GPU is an fd's.
    std::ifstream maps("/proc/self/maps");
    size_t n = 0;
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range, perms, offset, dev, inode, path;
        fields >> range >> perms >> offset >> dev >> inode >> path;
        if (!path.empty() && path[0] != '[')
            ++n;
    }
    return n;
}

void expectSame(std::vector<std::string>& left, const std::string& what, size_t before,
                size_t after) {
    if (before != after)
        left.push_back(what + ": " + std::to_string(before) + " -> " + std::to_string(after));
}

} // namespace faultsweep
