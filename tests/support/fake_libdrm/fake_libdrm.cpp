#include "fake_libdrm.h"

#include "sdma/packets.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fakesdma {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t pageAlign(uint64_t n) {
    return (n + kPage - 1) / kPage * kPage;
}

template <typename H> uintptr_t raw(H h) {
    return static_cast<uintptr_t>(h);
}

} // namespace

void BytesMemory::read(uint64_t offset, std::span<std::byte> out) {
    memcpy(out.data(), bytes_ + offset, out.size());
}

void BytesMemory::write(uint64_t offset, std::span<const std::byte> in) {
    memcpy(bytes_ + offset, in.data(), in.size());
}

struct FakeLibdrm::Dev {
    int64_t gpu = 0;
    int fd = -1; ///< the fd the device was first initialised on
    int refs = 0;
    uint64_t nextVa = 0;
    std::map<uint64_t, std::pair<uint64_t, uintptr_t>> vm; ///< va -> (size, BO)
};

struct FakeLibdrm::BoObj {
    uintptr_t dev = 0;
    enum Kind { Imported, Userptr, Gtt } kind = Imported;
    std::shared_ptr<Memory> memory; ///< Imported
    std::byte* host = nullptr;      ///< Userptr
    std::vector<std::byte> gtt;     ///< Gtt
    uint64_t size = 0;
    bool cpuMapped = false;
    int vaMappings = 0;
};

struct FakeLibdrm::Range {
    uintptr_t dev = 0;
    uint64_t va = 0, size = 0;
};

struct FakeLibdrm::Job {
    uint64_t seq = 0;
    uint64_t ibVa = 0;
    uint32_t ibDwords = 0;
    std::vector<uintptr_t> bos;
    bool done = false;
    std::string fault;
};

struct FakeLibdrm::Ctx {
    uintptr_t dev = 0;
    uint64_t nextSeq = 1;
    std::vector<Job> jobs;
};

struct FakeLibdrm::List {
    uintptr_t dev = 0;
    std::vector<uintptr_t> bos;
};

FakeLibdrm::FakeLibdrm(Host& host, uint64_t vaBase) : host_(host), vaBase_(vaBase) {}
FakeLibdrm::~FakeLibdrm() = default;

void FakeLibdrm::failCall(const std::string& name, int err, int nth) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_[name] = {nth, err};
}

int FakeLibdrm::injected(const std::string& name) {
    auto it = faults_.find(name);
    if (it == faults_.end() || --it->second.first > 0)
        return 0;
    int err = it->second.second;
    faults_.erase(it);
    return -err;
}

void FakeLibdrm::hang(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    hang_ = on;
}

size_t FakeLibdrm::liveObjects() {
    std::lock_guard<std::mutex> lock(mu_);
    return devs_.size() + bos_.size() + ranges_.size() + ctxs_.size() + lists_.size();
}

uint64_t FakeLibdrm::largestUserptr() {
    std::lock_guard<std::mutex> lock(mu_);
    return largestUserptr_;
}

uint64_t FakeLibdrm::peakUserptr() {
    std::lock_guard<std::mutex> lock(mu_);
    return peakUserptr_;
}

uint64_t FakeLibdrm::copyPackets() {
    std::lock_guard<std::mutex> lock(mu_);
    return copyPackets_;
}

std::vector<std::string> FakeLibdrm::faults() {
    std::lock_guard<std::mutex> lock(mu_);
    return gpuFaults_;
}

int FakeLibdrm::openRenderNode(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("openRenderNode"))
        return e;
    return host_.openRenderNode(path);
}

int FakeLibdrm::closeRenderNode(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    return host_.closeRenderNode(fd);
}

int FakeLibdrm::deviceInitialize(int fd, sdma::Device* dev) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("deviceInitialize"))
        return e;
    int64_t gpu = host_.gpuOfRenderFd(fd);
    if (gpu < 0)
        return static_cast<int>(gpu);
    uintptr_t& h = devOfGpu_[gpu];
    if (!h) {
        auto d = std::make_shared<Dev>();
        d->gpu = gpu;
        d->fd = fd;
        d->nextVa = vaBase_;
        h = nextHandle_++;
        devs_[h] = d;
    }
    ++devs_.at(h)->refs;
    *dev = static_cast<sdma::Device>(h);
    return 0;
}

int FakeLibdrm::deviceDeinitialize(sdma::Device dev) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = devs_.find(raw(dev));
    if (it == devs_.end())
        return -EINVAL;
    if (--it->second->refs == 0) {
        devOfGpu_.erase(it->second->gpu);
        devs_.erase(it);
    }
    return 0;
}

int FakeLibdrm::boImportDmabuf(sdma::Device dev, int dmabufFd, sdma::Bo* bo, uint64_t* size) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("boImportDmabuf"))
        return e;
    auto d = devs_.find(raw(dev));
    if (d == devs_.end())
        return -EINVAL;
    auto o = std::make_shared<BoObj>();
    if (int r = host_.importDmabuf(d->second->gpu, dmabufFd, &o->memory); r < 0)
        return r;
    o->dev = raw(dev);
    o->size = pageAlign(o->memory->size());
    uintptr_t h = nextHandle_++;
    bos_[h] = o;
    *bo = static_cast<sdma::Bo>(h);
    *size = o->size;
    return 0;
}

int FakeLibdrm::boFromUserMem(sdma::Device dev, void* cpu, uint64_t size, sdma::Bo* bo) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("boFromUserMem"))
        return e;
    if (!devs_.count(raw(dev)) || !cpu || size == 0 || reinterpret_cast<uintptr_t>(cpu) % kPage ||
        size % kPage)
        return -EINVAL;
    auto o = std::make_shared<BoObj>();
    o->dev = raw(dev);
    o->kind = BoObj::Userptr;
    o->host = static_cast<std::byte*>(cpu);
    o->size = size;
    uintptr_t h = nextHandle_++;
    bos_[h] = o;
    *bo = static_cast<sdma::Bo>(h);
    liveUserptr_ += size;
    largestUserptr_ = std::max(largestUserptr_, size);
    peakUserptr_ = std::max(peakUserptr_, liveUserptr_);
    return 0;
}

int FakeLibdrm::boAllocGtt(sdma::Device dev, uint64_t size, sdma::Bo* bo) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("boAllocGtt"))
        return e;
    if (!devs_.count(raw(dev)) || size == 0)
        return -EINVAL;
    auto o = std::make_shared<BoObj>();
    o->dev = raw(dev);
    o->kind = BoObj::Gtt;
    o->size = pageAlign(size);
    o->gtt.assign(o->size, std::byte{0xcd});
    uintptr_t h = nextHandle_++;
    bos_[h] = o;
    *bo = static_cast<sdma::Bo>(h);
    return 0;
}

int FakeLibdrm::boCpuMap(sdma::Bo bo, void** cpu) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("boCpuMap"))
        return e;
    auto it = bos_.find(raw(bo));
    if (it == bos_.end() || it->second->kind != BoObj::Gtt)
        return -EINVAL;
    it->second->cpuMapped = true;
    *cpu = it->second->gtt.data();
    return 0;
}

int FakeLibdrm::boCpuUnmap(sdma::Bo bo) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bos_.find(raw(bo));
    if (it == bos_.end() || !it->second->cpuMapped)
        return -EINVAL;
    it->second->cpuMapped = false;
    return 0;
}

int FakeLibdrm::boFree(sdma::Bo bo) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bos_.find(raw(bo));
    if (it == bos_.end())
        return -EINVAL;
    if (it->second->vaMappings)
        gpuFaults_.push_back("BO freed while still mapped in the GPU VA space");
    if (it->second->kind == BoObj::Userptr)
        liveUserptr_ -= it->second->size;
    bos_.erase(it);
    return 0;
}

int FakeLibdrm::vaRangeAlloc(sdma::Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                             sdma::VaRange* range) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("vaRangeAlloc"))
        return e;
    auto d = devs_.find(raw(dev));
    if (d == devs_.end() || size == 0)
        return -EINVAL;
    // libdrm's VA manager knows only its own allocations: a bump allocator from a fixed base.
    uint64_t align = std::max<uint64_t>(alignment, kPage);
    uint64_t start = (d->second->nextVa + align - 1) / align * align;
    d->second->nextVa = start + pageAlign(size);
    auto r = std::make_shared<Range>();
    r->dev = raw(dev);
    r->va = start;
    r->size = size;
    uintptr_t h = nextHandle_++;
    ranges_[h] = r;
    *range = static_cast<sdma::VaRange>(h);
    *va = start;
    return 0;
}

int FakeLibdrm::vaRangeFree(sdma::VaRange range) {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_.erase(raw(range)) ? 0 : -EINVAL;
}

int FakeLibdrm::boVaOp(sdma::Bo bo, uint64_t size, uint64_t va, bool map) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected(map ? "boVaOp" : "boVaOp:unmap"))
        return e;
    size = pageAlign(size); // amdgpu_bo_va_op maps whole pages
    auto b = bos_.find(raw(bo));
    if (b == bos_.end() || va % kPage || size == 0 || size > pageAlign(b->second->size))
        return -EINVAL;
    Dev& dev = *devs_.at(b->second->dev);
    if (!map) {
        auto m = dev.vm.find(va);
        if (m == dev.vm.end() || m->second.second != raw(bo))
            return -ENOENT;
        dev.vm.erase(m);
        --b->second->vaMappings;
        return 0;
    }
    bool inRange = false;
    for (const auto& [h, r] : ranges_)
        inRange = inRange || (r->dev == b->second->dev && va >= r->va &&
                              va + size <= r->va + pageAlign(r->size));
    if (!inRange)
        return -EINVAL;
    for (const auto& [start, m] : dev.vm)
        if (va < start + m.first && start < va + size)
            return -EINVAL;
    dev.vm[va] = {size, raw(bo)};
    ++b->second->vaMappings;
    host_.mapped(dev.fd, va, size);
    return 0;
}

int FakeLibdrm::ctxCreate(sdma::Device dev, sdma::Context* ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("ctxCreate"))
        return e;
    if (!devs_.count(raw(dev)))
        return -EINVAL;
    auto c = std::make_shared<Ctx>();
    c->dev = raw(dev);
    uintptr_t h = nextHandle_++;
    ctxs_[h] = c;
    *ctx = static_cast<sdma::Context>(h);
    return 0;
}

int FakeLibdrm::ctxFree(sdma::Context ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    return ctxs_.erase(raw(ctx)) ? 0 : -EINVAL;
}

int FakeLibdrm::boListCreate(sdma::Device dev, const std::vector<sdma::Bo>& bos,
                             sdma::BoList* list) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("boListCreate"))
        return e;
    auto l = std::make_shared<List>();
    l->dev = raw(dev);
    for (sdma::Bo b : bos) {
        auto it = bos_.find(raw(b));
        if (it == bos_.end() || it->second->dev != l->dev)
            return -EINVAL;
        l->bos.push_back(raw(b));
    }
    uintptr_t h = nextHandle_++;
    lists_[h] = l;
    *list = static_cast<sdma::BoList>(h);
    return 0;
}

int FakeLibdrm::boListDestroy(sdma::BoList list) {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_.erase(raw(list)) ? 0 : -EINVAL;
}

int FakeLibdrm::submitSdma(sdma::Context ctx, sdma::BoList list, uint64_t ibVa, uint32_t ibDwords,
                           uint64_t* seq) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("submitSdma"))
        return e;
    auto c = ctxs_.find(raw(ctx));
    auto l = lists_.find(raw(list));
    if (c == ctxs_.end() || l == lists_.end() || l->second->dev != c->second->dev || !ibDwords)
        return -EINVAL;
    Job job;
    job.seq = c->second->nextSeq++;
    job.ibVa = ibVa;
    job.ibDwords = ibDwords;
    job.bos = l->second->bos;
    c->second->jobs.push_back(job);
    *seq = job.seq;
    return 0;
}

FakeLibdrm::BoObj* FakeLibdrm::resolvePrefix(Dev& dev, uint64_t va, uint64_t bytes,
                                             const std::vector<uintptr_t>& allowed,
                                             uint64_t* offset, uint64_t* mapped) {
    *mapped = 0;
    auto it = dev.vm.upper_bound(va);
    if (it == dev.vm.begin())
        return nullptr;
    --it;
    const auto& [size, bo] = it->second;
    if (va >= it->first + size || std::find(allowed.begin(), allowed.end(), bo) == allowed.end())
        return nullptr;
    *offset = va - it->first;
    *mapped = std::min(bytes, it->first + size - va);
    return bos_.at(bo).get();
}

FakeLibdrm::BoObj* FakeLibdrm::resolve(Dev& dev, uint64_t va, uint64_t bytes,
                                       const std::vector<uintptr_t>& allowed, uint64_t* offset) {
    uint64_t mapped = 0;
    BoObj* bo = resolvePrefix(dev, va, bytes, allowed, offset, &mapped);
    return mapped == bytes ? bo : nullptr; // not mapped, or not in the submission's BO list
}

std::string parseIb(std::span<const uint32_t> dw, std::vector<LinearCopy>* out) {
    if (dw.size() % sdma::kIbAlignDwords)
        return "IB size not a multiple of 8 dwords";
    for (size_t i = 0; i < dw.size();) {
        uint32_t op = dw[i] & 0xff, sub = (dw[i] >> 8) & 0xff;
        if (op == sdma::kOpNop) {
            ++i;
            continue;
        }
        if (op != sdma::kOpCopy || sub != sdma::kSubOpCopyLinear ||
            i + sdma::kCopyPacketDwords > dw.size())
            return "unknown or truncated SDMA packet";
        const uint32_t* p = &dw[i];
        if (p[1] & ~sdma::kCountMask || p[2] != 0)
            return "COPY_LINEAR count wider than 22 bits or nonzero parameters";
        out->push_back(LinearCopy{p[3] | uint64_t{p[4]} << 32, p[5] | uint64_t{p[6]} << 32,
                                  uint64_t{p[1]} + 1}); // SDMA 4+: count - 1
        i += sdma::kCopyPacketDwords;
    }
    return {};
}

std::string FakeLibdrm::executeCopy(Dev& dev, const Job& job, const LinearCopy& copy) {
    uint64_t bytes = copy.bytes;
    uint64_t so = 0, dof = 0, sn = 0, dn = 0;
    BoObj* s = resolvePrefix(dev, copy.src, bytes, job.bos, &so, &sn);
    BoObj* d = resolvePrefix(dev, copy.dst, bytes, job.bos, &dof, &dn);
    if (!s || !d || sn < bytes || dn < bytes) {
        // A VM fault does not stop the engine (amdgpu's vm_fault_stop defaults to never): the
        // faulting accesses go to the dummy page (gfxhub's PROTECTION_FAULT_DEFAULT_ADDR), the
        // kernel logs the fault (gmc_v9_0_process_interrupt) and the job completes. The fake
        // copies what is mapped and records the fault.
        gpuFaults_.push_back("COPY_LINEAR of " + std::to_string(bytes) +
                             " bytes runs outside the mapped BOs of the submission (VM fault)");
        if (!s || !d)
            return {};
        bytes = std::min(sn, dn);
    }
    bool toBo = d->kind == BoObj::Imported;
    if (toBo == (s->kind == BoObj::Imported) || s->kind == BoObj::Gtt || d->kind == BoObj::Gtt)
        return "COPY_LINEAR not between a BO and user memory";
    ++copyPackets_;
    BoObj& bo = toBo ? *d : *s;
    uint64_t at = toBo ? dof : so;
    uint64_t held = bo.memory->size();
    uint64_t n = std::min<uint64_t>(bytes, held > at ? held - at : 0);
    if (toBo)
        bo.memory->write(at, {s->host + so, n});
    else
        bo.memory->read(at, {d->host + dof, n});
    host_.copied(dev.gpu, toBo, bytes);
    return {};
}

std::string FakeLibdrm::execute(Dev& dev, const Job& job) {
    uint64_t ibOff = 0;
    BoObj* ib = resolve(dev, job.ibVa, job.ibDwords * 4ull, job.bos, &ibOff);
    if (!ib || ib->kind != BoObj::Gtt)
        return "IB not mapped, not in the BO list, or not a GTT BO";
    std::vector<uint32_t> dw(job.ibDwords);
    memcpy(dw.data(), ib->gtt.data() + ibOff, job.ibDwords * 4ull);
    std::vector<LinearCopy> copies;
    if (std::string bad = parseIb(dw, &copies); !bad.empty())
        return bad;
    for (const LinearCopy& copy : copies)
        if (std::string fault = executeCopy(dev, job, copy); !fault.empty())
            return fault;
    return {};
}

int FakeLibdrm::waitFence(sdma::Context ctx, uint64_t seq, uint64_t, bool* signaled) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("waitFence"))
        return e;
    auto c = ctxs_.find(raw(ctx));
    if (c == ctxs_.end())
        return -EINVAL;
    Dev& dev = *devs_.at(c->second->dev);
    *signaled = false;
    if (hang_)
        return 0;
    // The engine runs the ring in order; a job's IB is read when it executes, not at submit.
    auto& jobs = c->second->jobs;
    for (Job& job : jobs) {
        if (job.seq > seq)
            break;
        if (job.done)
            continue;
        job.done = true;
        job.fault = execute(dev, job);
        if (!job.fault.empty())
            gpuFaults_.push_back(job.fault);
    }
    int result = -EINVAL;
    for (Job& job : jobs)
        if (job.seq == seq) {
            *signaled = job.done;
            result = job.fault.empty() ? 0 : -ECANCELED; // the context is guilty of a GPU hang
        }
    std::erase_if(jobs, [seq](const Job& j) { return j.done && j.seq < seq; });
    return result;
}

} // namespace fakesdma
