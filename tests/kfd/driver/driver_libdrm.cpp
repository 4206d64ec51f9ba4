// Op::Libdrm of the driver: the libdrm_amdgpu calls of a client's SDMA copies (the KFD backend's
// DriverKernel inside criu) run on the fake's libdrm, whose engine executes them on the BOs of
// the machine. A userptr or GTT BO's memory is a memfd the client maps where its own memory was
// and sends with the call; the driver maps it too, so the engine's copies land in the client's
// memory.
#include "driver_server.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kfddriver {

namespace {

Message answerOf(int result, const std::vector<uint64_t>& numbers = {}) {
    Message m;
    m.pid = result;
    m.text = encodeNumbers(numbers);
    return m;
}

template <typename H> H asHandle(uint64_t n) {
    return static_cast<H>(static_cast<uintptr_t>(n));
}
template <typename H> uint64_t number(H h) {
    return static_cast<uint64_t>(static_cast<uintptr_t>(h));
}

} // namespace

Message DriverServer::libdrm(const Message& request, int memfd) {
    std::vector<uint64_t> n;
    sdma::Libdrm& drm = kernel_->libdrm();
    auto call = static_cast<LibdrmCall>(request.a);
    if (!decodeNumbers(request.text, &n)) {
        if (memfd >= 0)
            ::close(memfd);
        return answerOf(-EINVAL);
    }
    // How many numbers each call takes (BoListCreate: at least its device).
    static const std::map<LibdrmCall, size_t> arity = {
        {LibdrmCall::OpenRenderNode, 0},   {LibdrmCall::CloseRenderNode, 1},
        {LibdrmCall::DeviceInitialize, 1}, {LibdrmCall::DeviceDeinitialize, 1},
        {LibdrmCall::BoImportDmabuf, 2},   {LibdrmCall::BoFromUserMem, 2},
        {LibdrmCall::BoFree, 1},           {LibdrmCall::VaRangeAlloc, 3},
        {LibdrmCall::VaRangeFree, 1},      {LibdrmCall::BoVaOp, 4},
        {LibdrmCall::CtxCreate, 1},        {LibdrmCall::CtxFree, 1},
        {LibdrmCall::BoListCreate, 1},     {LibdrmCall::BoListDestroy, 1},
        {LibdrmCall::SubmitSdma, 4},       {LibdrmCall::WaitFence, 3},
        {LibdrmCall::BoAllocGtt, 2}};
    auto expected = arity.find(call);
    if (expected == arity.end() || n.size() < expected->second ||
        (call == LibdrmCall::BoFromUserMem) != (memfd >= 0)) {
        if (memfd >= 0)
            ::close(memfd);
        return answerOf(-EINVAL);
    }
    switch (call) {
    case LibdrmCall::OpenRenderNode:
        return answerOf(drm.openRenderNode(request.buffers.empty() ? "" : request.buffers[0]));
    case LibdrmCall::CloseRenderNode:
        return answerOf(drm.closeRenderNode(static_cast<int>(n[0])));
    case LibdrmCall::DeviceInitialize: {
        sdma::Device dev{};
        int r = drm.deviceInitialize(static_cast<int>(n[0]), &dev);
        return answerOf(r, {number(dev)});
    }
    case LibdrmCall::DeviceDeinitialize:
        return answerOf(drm.deviceDeinitialize(asHandle<sdma::Device>(n[0])));
    case LibdrmCall::BoImportDmabuf: {
        sdma::Bo bo{};
        uint64_t size = 0;
        int r =
            drm.boImportDmabuf(asHandle<sdma::Device>(n[0]), static_cast<int>(n[1]), &bo, &size);
        return answerOf(r, {number(bo), size});
    }
    case LibdrmCall::BoFromUserMem: {
        void* mem = mmap(nullptr, n[1], PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        int e = errno;
        ::close(memfd);
        if (mem == MAP_FAILED)
            return answerOf(-e);
        sdma::Bo bo{};
        int r = drm.boFromUserMem(asHandle<sdma::Device>(n[0]), mem, n[1], &bo);
        if (r < 0) {
            munmap(mem, n[1]);
            return answerOf(r);
        }
        sharedMemory_[number(bo)] = {mem, n[1]};
        return answerOf(r, {number(bo)});
    }
    case LibdrmCall::BoAllocGtt: {
        sdma::Bo bo{};
        int r = drm.boAllocGtt(asHandle<sdma::Device>(n[0]), n[1], &bo);
        return answerOf(r, {number(bo)});
    }
    case LibdrmCall::BoFree: {
        int r = drm.boFree(asHandle<sdma::Bo>(n[0]));
        auto shared = sharedMemory_.find(n[0]);
        if (r == 0 && shared != sharedMemory_.end()) {
            munmap(shared->second.first, shared->second.second);
            sharedMemory_.erase(shared);
        }
        return answerOf(r);
    }
    case LibdrmCall::VaRangeAlloc: {
        uint64_t va = 0;
        sdma::VaRange range{};
        int r = drm.vaRangeAlloc(asHandle<sdma::Device>(n[0]), n[1], n[2], &va, &range);
        return answerOf(r, {va, number(range)});
    }
    case LibdrmCall::VaRangeFree:
        return answerOf(drm.vaRangeFree(asHandle<sdma::VaRange>(n[0])));
    case LibdrmCall::BoVaOp:
        return answerOf(drm.boVaOp(asHandle<sdma::Bo>(n[0]), n[1], n[2], n[3] != 0));
    case LibdrmCall::CtxCreate: {
        sdma::Context ctx{};
        int r = drm.ctxCreate(asHandle<sdma::Device>(n[0]), &ctx);
        return answerOf(r, {number(ctx)});
    }
    case LibdrmCall::CtxFree:
        return answerOf(drm.ctxFree(asHandle<sdma::Context>(n[0])));
    case LibdrmCall::BoListCreate: {
        std::vector<sdma::Bo> bos;
        for (size_t i = 1; i < n.size(); ++i)
            bos.push_back(asHandle<sdma::Bo>(n[i]));
        sdma::BoList list{};
        int r = drm.boListCreate(asHandle<sdma::Device>(n[0]), bos, &list);
        return answerOf(r, {number(list)});
    }
    case LibdrmCall::BoListDestroy:
        return answerOf(drm.boListDestroy(asHandle<sdma::BoList>(n[0])));
    case LibdrmCall::SubmitSdma: {
        if (n.size() >= 6 && request.buffers.size() == 1) {
            // What the client's CPU wrote into the GTT BO: its IB.
            void* cpu = nullptr;
            if (int r = drm.boCpuMap(asHandle<sdma::Bo>(n[4]), &cpu); r < 0)
                return answerOf(r);
            const std::string& ib = request.buffers[0];
            memcpy(static_cast<char*>(cpu) + n[5], ib.data(), ib.size());
            drm.boCpuUnmap(asHandle<sdma::Bo>(n[4]));
        }
        uint64_t seq = 0;
        int r = drm.submitSdma(asHandle<sdma::Context>(n[0]), asHandle<sdma::BoList>(n[1]), n[2],
                               static_cast<uint32_t>(n[3]), &seq);
        return answerOf(r, {seq});
    }
    case LibdrmCall::WaitFence: {
        bool signaled = false;
        int r = drm.waitFence(asHandle<sdma::Context>(n[0]), n[1], n[2], &signaled);
        return answerOf(r, {signaled ? 1u : 0u});
    }
    }
    return answerOf(-EINVAL);
}

} // namespace kfddriver
