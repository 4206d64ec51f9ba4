// DriverKernel's libdrm: each libdrm_amdgpu call of an SDMA copy session goes to the driver
// (kfddriver::LibdrmCall), whose engine runs it on the machine's BOs. Handles are the driver's;
// a render node opened here is a file id of the driver's. The memory of a userptr BO (the
// staging buffer) becomes a memfd mapped where it was, with its bytes, and goes to the driver,
// which maps it too: the engine's copies land in this process's memory. A GTT BO (command
// buffers) is such a memfd of its own, which boCpuMap answers.
#include "driver_libdrm.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace kfd {

namespace {

using kfddriver::LibdrmCall;
using kfddriver::Message;

constexpr uint64_t kPage = 4096;

template <typename H> uint64_t number(H h) {
    return static_cast<uint64_t>(static_cast<uintptr_t>(h));
}
template <typename H> H handle(uint64_t n) {
    return static_cast<H>(static_cast<uintptr_t>(n));
}

/// A memfd of `size` bytes: an fd or -errno.
int sizedMemfd(uint64_t size) {
    int fd = memfd_create("kfd-driver-bo", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

bool zeroPage(const char* page) {
    static const char kZeros[kPage] = {};
    return memcmp(page, kZeros, kPage) == 0;
}

/// Copies the `size` bytes at `cpu` (whole pages) into the memfd `fd`, which reads as zeros:
/// only the runs of pages holding a byte other than zero are written, so a fresh staging buffer
/// (never touched, read as the kernel's zero page) costs the memfd no page until a copy lands in
/// it. 0 or -errno.
int copyPagesIn(int fd, const void* cpu, uint64_t size) {
    const char* base = static_cast<const char*>(cpu);
    uint64_t at = 0;
    while (at < size) {
        if (zeroPage(base + at)) {
            at += kPage;
            continue;
        }
        uint64_t end = at + kPage;
        while (end < size && !zeroPage(base + end))
            end += kPage;
        for (uint64_t done = at; done < end;) {
            ssize_t n = pwrite(fd, base + done, end - done, static_cast<off_t>(done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -errno : -EIO;
            done += static_cast<uint64_t>(n);
        }
        at = end;
    }
    return 0;
}

class DriverLibdrm final : public sdma::Libdrm {
public:
    explicit DriverLibdrm(DriverLink& link) : link_(link) {}
    ~DriverLibdrm() override {
        for (const auto& [bo, mem] : gtt_)
            munmap(mem.cpu, mem.size);
    }

    int openRenderNode(const std::string& path) override {
        return call(LibdrmCall::OpenRenderNode, {}, nullptr, -1, &path);
    }
    int closeRenderNode(int fd) override {
        return call(LibdrmCall::CloseRenderNode, {static_cast<uint64_t>(fd)});
    }
    int deviceInitialize(int fd, sdma::Device* dev) override {
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::DeviceInitialize, {static_cast<uint64_t>(fd)}, &out);
        *dev = handle<sdma::Device>(out[0]);
        return r;
    }
    int deviceDeinitialize(sdma::Device dev) override {
        return call(LibdrmCall::DeviceDeinitialize, {number(dev)});
    }
    int boImportDmabuf(sdma::Device dev, int dmabufFd, sdma::Bo* bo, uint64_t* size) override {
        int64_t file = link_.fileOf(dmabufFd);
        if (file < 0)
            return -EBADF; // not a dmabuf of the driver's
        std::vector<uint64_t> out(2);
        int r = call(LibdrmCall::BoImportDmabuf, {number(dev), static_cast<uint64_t>(file)}, &out);
        *bo = handle<sdma::Bo>(out[0]);
        *size = out[1];
        return r;
    }
    int boFromUserMem(sdma::Device dev, void* cpu, uint64_t size, sdma::Bo* bo) override {
        if (reinterpret_cast<uintptr_t>(cpu) % kPage || size % kPage || !size)
            return -EINVAL;
        int fd = sizedMemfd(size);
        if (fd < 0)
            return fd;
        // The memory keeps its bytes and its place; from now on it is the memfd's.
        if (int r = copyPagesIn(fd, cpu, size); r < 0) {
            close(fd);
            return r;
        }
        if (mmap(cpu, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
            int e = errno;
            close(fd);
            return -e;
        }
        int r = shareMemory(dev, fd, size, bo);
        close(fd);
        return r;
    }
    int boAllocGtt(sdma::Device dev, uint64_t size, sdma::Bo* bo) override {
        uint64_t bytes = (size + kPage - 1) / kPage * kPage;
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::BoAllocGtt, {number(dev), size}, &out);
        if (r < 0)
            return r;
        *bo = handle<sdma::Bo>(out[0]);
        void* mem =
            mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            int e = errno;
            call(LibdrmCall::BoFree, {number(*bo)});
            return -e;
        }
        std::lock_guard<std::mutex> lock(mu_);
        gtt_[number(*bo)] = {mem, bytes, 0};
        return r;
    }
    int boCpuMap(sdma::Bo bo, void** cpu) override {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = gtt_.find(number(bo));
        if (it == gtt_.end())
            return -EINVAL;
        *cpu = it->second.cpu;
        return 0;
    }
    int boCpuUnmap(sdma::Bo bo) override {
        std::lock_guard<std::mutex> lock(mu_);
        return gtt_.count(number(bo)) ? 0 : -EINVAL;
    }
    int boFree(sdma::Bo bo) override {
        int r = call(LibdrmCall::BoFree, {number(bo)});
        std::lock_guard<std::mutex> lock(mu_);
        auto it = gtt_.find(number(bo));
        if (r == 0 && it != gtt_.end()) {
            munmap(it->second.cpu, it->second.size);
            gtt_.erase(it);
        }
        return r;
    }
    int vaRangeAlloc(sdma::Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                     sdma::VaRange* range) override {
        std::vector<uint64_t> out(2);
        int r = call(LibdrmCall::VaRangeAlloc, {number(dev), size, alignment}, &out);
        *va = out[0];
        *range = handle<sdma::VaRange>(out[1]);
        return r;
    }
    int vaRangeFree(sdma::VaRange range) override {
        return call(LibdrmCall::VaRangeFree, {number(range)});
    }
    int boVaOp(sdma::Bo bo, uint64_t size, uint64_t va, bool map) override {
        int r = call(LibdrmCall::BoVaOp, {number(bo), size, va, map ? 1u : 0u});
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = gtt_.find(number(bo)); r == 0 && it != gtt_.end())
            it->second.va = map ? va : 0;
        return r;
    }
    int ctxCreate(sdma::Device dev, sdma::Context* ctx) override {
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::CtxCreate, {number(dev)}, &out);
        *ctx = handle<sdma::Context>(out[0]);
        return r;
    }
    int ctxFree(sdma::Context ctx) override { return call(LibdrmCall::CtxFree, {number(ctx)}); }
    int boListCreate(sdma::Device dev, const std::vector<sdma::Bo>& bos,
                     sdma::BoList* list) override {
        std::vector<uint64_t> args{number(dev)};
        for (sdma::Bo bo : bos)
            args.push_back(number(bo));
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::BoListCreate, args, &out);
        *list = handle<sdma::BoList>(out[0]);
        return r;
    }
    int boListDestroy(sdma::BoList list) override {
        return call(LibdrmCall::BoListDestroy, {number(list)});
    }
    int submitSdma(sdma::Context ctx, sdma::BoList list, uint64_t ibVa, uint32_t ibDwords,
                   uint64_t* seq) override {
        std::vector<uint64_t> args{number(ctx), number(list), ibVa, ibDwords};
        std::string ib;
        {
            // The IB as this process's CPU wrote it into a GTT BO mapped at ibVa.
            std::lock_guard<std::mutex> lock(mu_);
            uint64_t bytes = uint64_t{ibDwords} * 4;
            for (const auto& [bo, mem] : gtt_)
                if (mem.va && ibVa >= mem.va && ibVa - mem.va + bytes <= mem.size) {
                    args.push_back(bo);
                    args.push_back(ibVa - mem.va);
                    ib.assign(static_cast<const char*>(mem.cpu) + (ibVa - mem.va), bytes);
                }
        }
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::SubmitSdma, args, &out, -1, nullptr, ib.empty() ? nullptr : &ib);
        *seq = out[0];
        return r;
    }
    int waitFence(sdma::Context ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) override {
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::WaitFence, {number(ctx), seq, timeoutNs}, &out);
        *signaled = out[0] != 0;
        return r;
    }

private:
    /// The driver maps memfd `fd` of `size` bytes as a userptr BO of `dev`.
    int shareMemory(sdma::Device dev, int fd, uint64_t size, sdma::Bo* bo) {
        std::vector<uint64_t> out(1);
        int r = call(LibdrmCall::BoFromUserMem, {number(dev), size}, &out, fd);
        *bo = handle<sdma::Bo>(out[0]);
        return r;
    }

    /// One call: its result (or -errno), the numbers it answers in *out (as many as it holds).
    int call(LibdrmCall what, const std::vector<uint64_t>& args,
             std::vector<uint64_t>* out = nullptr, int passFd = -1,
             const std::string* path = nullptr, const std::string* bytes = nullptr) {
        Message m, answer;
        m.op = static_cast<uint32_t>(kfddriver::Op::Libdrm);
        m.a = static_cast<uint64_t>(what);
        m.text = kfddriver::encodeNumbers(args);
        if (path || bytes)
            m.buffers = {path ? *path : *bytes};
        if (!link_.call(m, &answer, passFd))
            return -EIO;
        std::vector<uint64_t> numbers;
        if (!kfddriver::decodeNumbers(answer.text, &numbers))
            return -EPROTO;
        if (answer.pid < 0)
            return answer.pid;
        if (out) {
            if (numbers.size() < out->size())
                return -EPROTO;
            std::copy(numbers.begin(), numbers.begin() + static_cast<long>(out->size()),
                      out->begin());
        }
        return answer.pid;
    }

    DriverLink& link_;
    std::mutex mu_;
    struct GttMemory {
        void* cpu = nullptr;
        uint64_t size = 0;
        uint64_t va = 0; ///< where it is mapped in the device's VM, 0: nowhere
    };
    std::map<uint64_t, GttMemory> gtt_; ///< GTT BOs: what this process's CPU sees of them
};

} // namespace

std::unique_ptr<sdma::Libdrm> makeDriverLibdrm(DriverLink& link) {
    return std::make_unique<DriverLibdrm>(link);
}

} // namespace kfd
