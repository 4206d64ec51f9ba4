#include "hal/device.h"

#include "datapath/image_increment.h"
#include "formats/content_keys.h"
#include "formats/image_names.h"
#include "formats/topology_codec.h"
#include "topology/render_node_access.h"

#include "base/log.h"
#include "topology/match.h"

#include <algorithm>
#include <unistd.h>

namespace hal {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;
using coordination::ContentJob;
using coordination::makeLocalShareExchange;
using coordination::ShareExchange;
using datapath::IncrementalDump;
using datapath::RestoreChain;
using formats::Cipher;
using formats::CodecSpec;
using formats::ImageStore;
using formats::kTopologyImageName;
using formats::parseCipher;
using formats::parseCodec;
using formats::readTopologyImage;
using topology::AbsentNode;
using topology::DeviceNodeCalls;
using topology::ensureRenderNode;
using topology::explainUnusableGpus;
using topology::gpuIdHex;
using topology::gpusAllowedToOpen;
using topology::mappingOf;
using topology::MatchOptions;
using topology::matchOptionsFromSettings;
using topology::MatchReport;
using topology::matchTopologies;
using topology::Node;
using topology::renderNodePathIn;
using topology::systemDeviceNodeCalls;
using topology::Topology;

const char* dumpPhaseName(DumpPhase phase) {
    switch (phase) {
    case DumpPhase::None:
        return "not started";
    case DumpPhase::Paused:
        return "paused";
    case DumpPhase::Collected:
        return "objects collected";
    case DumpPhase::Checkpointed:
        return "checkpointed";
    case DumpPhase::Failed:
        return "failed";
    case DumpPhase::Unpaused:
        return "unpaused";
    }
    return "unknown";
}

Device::Device(std::string backendName, DeviceEnv env)
    : backendName_(std::move(backendName)), env_(env) {}

Device::~Device() = default;

DumpPhase Device::phaseOf(int pid) const {
    auto it = phases_.find(pid);
    return it == phases_.end() ? DumpPhase::None : it->second;
}

Result<ImageStore*> Device::images() {
    if (!env_.images)
        return makeError(ErrorCode::Internal, "%s: no image store set", backendName_.c_str());
    // The keys of encrypted contents (formats/content_keys.h) follow this device's options.
    HAL_TRY_ASSIGN(Cipher cipher, parseCipher(settings().contentEncryption));
    env_.images->contentKeys().configure(
        {cipher, settings().contentCertificate, settings().contentPrivateKey,
         settings().contentAllowPlaintext, settings().contentLegacyKeyWrap,
         settings().parentImages});
    env_.images->setDirectWrites(settings().directWrite);
    return env_.images;
}

Result<bool> Device::holdsAnyImage(std::initializer_list<std::string> names) {
    HAL_TRY_ASSIGN(ImageStore * store, images());
    return std::any_of(names.begin(), names.end(),
                       [store](const std::string& name) { return store->exists(name); });
}

Result<const IncrementalDump*> Device::incrementalDump() {
    std::lock_guard<std::mutex> lock(formatsMutex_);
    if (!incremental_) {
        HAL_TRY_ASSIGN(ImageStore * store, images());
        HAL_TRY_ASSIGN(IncrementalDump dump,
                       IncrementalDump::open(*store, settings().parentImages));
        if (dump.hasParent())
            HAL_LOG_INFO("%s: dumping against the parent checkpoint %s", backendName_.c_str(),
                         dump.parentDir().c_str());
        incremental_ = std::make_unique<IncrementalDump>(std::move(dump));
    }
    return incremental_.get();
}

Result<CodecSpec> Device::contentCodec() const {
    return parseCodec(settings().contentCompression);
}

Result<const RestoreChain*> Device::restoreChainOf(uint32_t id) {
    std::lock_guard<std::mutex> lock(formatsMutex_);
    auto it = chains_.find(id);
    if (it == chains_.end()) {
        HAL_TRY_ASSIGN(ImageStore * store, images());
        HAL_TRY_ASSIGN(std::shared_ptr<const RestoreChain> chain,
                       RestoreChain::load(*store, id, &chainBudget_));
        if (chain)
            HAL_LOG_INFO("%s: file id %u is incremental: a chain of %zu checkpoints",
                         backendName_.c_str(), id, chain->levels().size());
        it = chains_.emplace(id, std::move(chain)).first;
    }
    return it->second.get();
}

ShareExchange& Device::shareExchange() {
    if (shares_)
        return *shares_;
    if (!localShares_)
        localShares_ = makeLocalShareExchange();
    return *localShares_;
}

// ------------------------------------------------------------------------------------ dump

Result<bool> Device::claimFile(const FileRef& file) {
    if (file.fd < 0)
        return makeError(ErrorCode::InvalidArgument, "claimFile: bad fd %d", file.fd);
    HAL_TRY_ASSIGN(bool mine, claimFileImpl(file));
    HAL_LOG_DEBUG("%s: file %s (id %u) %s", backendName_.c_str(), file.path.c_str(), file.id,
                  mine ? "claimed" : "not ours");
    return mine;
}

Result<bool> Device::claimVma(const VmaRef& vma) {
    if (vma.fd < 0)
        return makeError(ErrorCode::InvalidArgument, "claimVma: bad fd %d", vma.fd);
    return claimVmaImpl(vma);
}

Result<void> Device::failDump(int pid, Error error) {
    DumpPhase was = phaseOf(pid);
    phases_[pid] = DumpPhase::Failed;
    if (was == DumpPhase::Paused || was == DumpPhase::Collected || was == DumpPhase::Checkpointed) {
        auto unpaused = unpauseImpl(pid);
        if (!unpaused.ok())
            error.addContext(strFormat("and unpausing process %d failed too: %s", pid,
                                       unpaused.error().describe().c_str()));
        else
            HAL_LOG_INFO("%s: process %d unpaused after a failed dump", backendName_.c_str(), pid);
    }
    return error;
}

Result<bool> Device::pauseProcess(int pid) {
    if (pid <= 0)
        return makeError(ErrorCode::InvalidArgument, "pauseProcess: bad pid %d", pid);
    DumpPhase phase = phaseOf(pid);
    if (phase != DumpPhase::None)
        return makeError(ErrorCode::PhaseOrder, "process %d cannot be paused: it is %s", pid,
                         dumpPhaseName(phase));
    // The certificate, a parent's key and a parent that cannot serve are refused before anything
    // is paused (every backend's contents go through the HAL's recipe, hal/bo_contents.h, which
    // compresses, encrypts and dumps incrementally for all of them).
    if (settings().contentEncryption != "none" || !settings().parentImages.empty())
        HAL_TRY(incrementalDump());
    auto paused = pauseImpl(pid);
    if (!paused.ok()) {
        phases_[pid] = DumpPhase::Failed;
        return std::move(paused.error().addContext(strFormat("while pausing process %d", pid)));
    }
    if (!paused.value())
        return false;
    phases_[pid] = DumpPhase::Paused;
    HAL_LOG_INFO("%s: process %d paused", backendName_.c_str(), pid);
    return true;
}

Result<void> Device::checkpointProcess(int pid) {
    DumpPhase phase = phaseOf(pid);
    if (phase != DumpPhase::Paused)
        return makeError(ErrorCode::PhaseOrder, "process %d cannot be checkpointed: it is %s", pid,
                         dumpPhaseName(phase));
    auto collected = collectObjectsImpl(pid);
    if (!collected.ok())
        return failDump(pid, std::move(collected.error().addContext(
                                 strFormat("while collecting GPU objects of process %d", pid))));
    phases_[pid] = DumpPhase::Collected;
    auto streamed = streamContentsImpl(pid);
    if (!streamed.ok())
        return failDump(pid, std::move(streamed.error().addContext(
                                 strFormat("while saving GPU memory of process %d", pid))));
    phases_[pid] = DumpPhase::Checkpointed;
    HAL_LOG_INFO("%s: process %d checkpointed", backendName_.c_str(), pid);
    return success();
}

Result<void> Device::dumpFile(const FileRef& file) {
    if (file.fd < 0)
        return makeError(ErrorCode::InvalidArgument, "dumpFile: bad fd %d", file.fd);
    if (dumpedFiles_.count(file.id))
        return makeError(ErrorCode::PhaseOrder, "file id %u dumped twice", file.id);
    HAL_TRY_ASSIGN_CONTEXT(int pid, processOfFileImpl(file), "while dumping %s (file id %u)",
                           file.path.c_str(), file.id);
    if (phaseOf(pid) == DumpPhase::None) {
        // criu without PAUSE_DEVICES / CHECKPOINT_DEVICES: do those phases here.
        HAL_TRY_ASSIGN_CONTEXT(bool had, pauseProcess(pid), "while dumping %s (file id %u)",
                               file.path.c_str(), file.id);
        if (!had)
            return makeError(ErrorCode::Internal,
                             "%s: process %d holds %s but has no GPU state on it",
                             backendName_.c_str(), pid, file.path.c_str());
        HAL_TRY_CONTEXT(checkpointProcess(pid), "while dumping %s (file id %u)", file.path.c_str(),
                        file.id);
    }
    DumpPhase phase = phaseOf(pid);
    if (phase != DumpPhase::Checkpointed)
        return makeError(ErrorCode::PhaseOrder, "file %s of process %d cannot be dumped: it is %s",
                         file.path.c_str(), pid, dumpPhaseName(phase));
    auto written = writeFileImagesImpl(file, pid);
    if (!written.ok())
        return failDump(pid, std::move(written.error().addContext(
                                 strFormat("while writing images of %s (file id %u) of process %d",
                                           file.path.c_str(), file.id, pid))));
    dumpedFiles_.insert(file.id);
    return success();
}

Result<void> Device::finishDump(bool dumpSucceeded) {
    std::optional<Error> first;
    for (auto& [pid, phase] : phases_) {
        if (phase != DumpPhase::Paused && phase != DumpPhase::Collected &&
            phase != DumpPhase::Checkpointed)
            continue;
        auto r = unpauseImpl(pid);
        if (!r.ok()) {
            HAL_LOG_ERROR("%s: unpausing process %d failed: %s", backendName_.c_str(), pid,
                          r.error().describe().c_str());
            if (!first)
                first = std::move(r.error());
            continue;
        }
        phase = DumpPhase::Unpaused;
        HAL_LOG_INFO("%s: process %d unpaused (dump %s)", backendName_.c_str(), pid,
                     dumpSucceeded ? "succeeded" : "failed");
    }
    if (first)
        return std::move(*first);
    return success();
}

std::vector<int> Device::pausedProcesses() const {
    std::vector<int> pids;
    for (const auto& [pid, phase] : phases_)
        if (phase == DumpPhase::Paused || phase == DumpPhase::Collected ||
            phase == DumpPhase::Checkpointed)
            pids.push_back(pid);
    return pids;
}

Result<PausedRelease> Device::releasePaused(int pid, int pidfd) {
    if (pid <= 0)
        return makeError(ErrorCode::InvalidArgument, "releasePaused: bad pid %d", pid);
    auto r = releasePausedImpl(pid, pidfd);
    if (!r.ok())
        return std::move(
            r.error().addContext(strFormat("while releasing the GPU work of process %d", pid)));
    return r;
}

Result<PausedRelease> Device::releasePausedImpl(int, int) {
    return makeError(ErrorCode::NotSupported,
                     "the %s backend cannot release GPU work a dead dumper left paused",
                     backendName_.c_str());
}

const char* pausedReleaseName(PausedRelease outcome) {
    switch (outcome) {
    case PausedRelease::Unpaused:
        return "unpaused";
    case PausedRelease::NotPaused:
        return "not paused";
    case PausedRelease::NoGpu:
        return "no GPU work";
    case PausedRelease::Gone:
        return "exited";
    }
    return "?";
}

Result<bool> Device::claimVmaImpl(const VmaRef&) {
    return false;
}

// ---------------------------------------------------------------------------------- restore

Result<bool> Device::ownsImage(uint32_t id) {
    return ownsImageImpl(id);
}

Result<bool> Device::restoreLater(uint32_t id) {
    if (restoreFailed_ || restoredFiles_.count(id))
        return false;
    return restoreLaterImpl(id);
}

Result<bool> Device::restoreLaterImpl(uint32_t) {
    return false;
}

Result<int> Device::restoreFile(uint32_t id) {
    if (restoreFailed_)
        return makeError(ErrorCode::PhaseOrder, "restore of file id %u after a failed restore", id);
    if (restoredFiles_.count(id))
        return makeError(ErrorCode::PhaseOrder, "file id %u restored twice", id);
    auto fd = restoreFileImpl(id);
    if (!fd.ok()) {
        restoreFailed_ = true;
        return std::move(fd.error().addContext(strFormat("while restoring file id %u", id)));
    }
    restoredFiles_.insert(id);
    HAL_LOG_INFO("%s: file id %u restored as fd %d", backendName_.c_str(), id, fd.value());
    return fd;
}

Result<std::optional<VmaAnswer>> Device::updateVmaMap(const VmaQuery& query) {
    return updateVmaMapImpl(query);
}

Result<std::optional<VmaAnswer>> Device::updateVmaMapImpl(const VmaQuery&) {
    return std::optional<VmaAnswer>();
}

Result<void> Device::postForking() {
    if (restoreFailed_)
        return makeError(ErrorCode::PhaseOrder, "post-forking after a failed restore");
    return postForkingImpl();
}

Result<void> Device::postForkingImpl() {
    return success();
}

Result<void> Device::restoreHandedContents(ContentJob& job, std::span<std::byte> staging) {
    return restoreHandedContentsImpl(job, staging);
}

void Device::discardHandedContents(ContentJob& job) {
    discardHandedContentsImpl(job);
}

Result<void> Device::restoreHandedContentsImpl(ContentJob& job, std::span<std::byte>) {
    discardHandedContentsImpl(job);
    return makeError(ErrorCode::NotSupported,
                     "%s: this backend does not restore BO contents handed over by a task",
                     backendName_.c_str());
}

void Device::discardHandedContentsImpl(ContentJob& job) {
    for (int fd : job.fds)
        ::close(fd);
    job.fds.clear();
}

Result<bool> Device::resumeProcess(int pid) {
    if (pid <= 0)
        return makeError(ErrorCode::InvalidArgument, "resumeProcess: bad pid %d", pid);
    if (restoreFailed_)
        return makeError(ErrorCode::PhaseOrder, "process %d not resumed: the restore failed", pid);
    auto resumed = resumeImpl(pid);
    if (!resumed.ok())
        return std::move(resumed.error().addContext(strFormat("while resuming process %d", pid)));
    if (resumed.value())
        HAL_LOG_INFO("%s: process %d resumed", backendName_.c_str(), pid);
    return resumed;
}

Result<void> Device::finishRestore(bool restoreSucceeded) {
    if (restoreSucceeded && !restoreFailed_)
        return success();
    restoreFailed_ = true;
    return abortRestoreImpl();
}

Result<void> Device::abortRestoreImpl() {
    return success();
}

Result<std::optional<std::set<uint32_t>>> Device::usableGpuIdsImpl() {
    return std::optional<std::set<uint32_t>>();
}

std::string Device::deviceViewImpl() {
    return "";
}

AbsentNode Device::absentNodes() const {
    return env_.probeAbsentNodes ? AbsentNode::Probe : AbsentNode::Report;
}

std::set<uint32_t> Device::gpusThisProcessMayOpen(DeviceNodeCalls& calls, const Topology& topo,
                                                  const std::string& devDir) const {
    std::vector<std::string> leftOut;
    std::set<uint32_t> usable;
    for (const Node* gpu : gpusAllowedToOpen(calls, topo, devDir, absentNodes(), false, &leftOut))
        usable.insert(gpu->gpuId);
    for (const std::string& why : leftOut)
        HAL_LOG_INFO("%s: not this process's: %s", backendName_.c_str(), why.c_str());
    gpusLeftOut_ = std::move(leftOut);
    return usable;
}

Result<void> Device::giveRenderNode(DeviceNodeCalls& calls, const std::string& devDir, int minor,
                                    uint32_t gpuId) const {
    HAL_TRY_ASSIGN_CONTEXT(bool made, ensureRenderNode(calls, devDir, minor),
                           "%s: giving the restored process the render node of GPU %s",
                           backendName_.c_str(), gpuIdHex(gpuId).c_str());
    if (made)
        HAL_LOG_INFO("%s: made %s for GPU %s: the restored %s lacked it (a new pod's GPU)",
                     backendName_.c_str(), renderNodePathIn(devDir, minor).c_str(),
                     gpuIdHex(gpuId).c_str(), devDir.c_str());
    return success();
}

DeviceNodeCalls& Device::deviceNodeCalls() const {
    return env_.deviceNodes ? *env_.deviceNodes : systemDeviceNodeCalls();
}

Result<Device::RestoreMatch> Device::matchForRestore(const Topology& source) {
    HAL_TRY_ASSIGN_CONTEXT(Topology local, localTopologyImpl(),
                           "while reading this machine's "
                           "topology");
    MatchOptions options = matchOptionsFromSettings(settings());
    HAL_TRY_ASSIGN(options.usableDstGpuIds, usableGpuIdsImpl());
    MatchReport report = matchTopologies(source, local, options);
    // What the kernel answered for each GPU left out: a node that failed to open with EIO is not
    // one the container was not given (the fault sweep of issue 55 found only the latter said).
    std::string view = deviceViewImpl();
    for (const std::string& why : gpusLeftOut_)
        view += (view.empty() ? "" : "; ") + why;
    explainUnusableGpus(report, local, options.usableDstGpuIds, view);
    return RestoreMatch{std::move(local), std::move(report)};
}

Result<std::map<uint32_t, uint32_t>> Device::planGpuMapping(const Topology& source) {
    if (gpuMapping_)
        return *gpuMapping_;
    HAL_TRY_ASSIGN(RestoreMatch match, matchForRestore(source));
    HAL_TRY_ASSIGN_CONTEXT(auto mapping, mappingOf(match.report),
                           "while mapping the checkpointed GPUs (%s) onto this machine (%s)",
                           source.source.c_str(), match.local.source.c_str());
    for (const auto& [src, dst] : mapping)
        HAL_LOG_INFO("%s: GPU 0x%04x -> 0x%04x", backendName_.c_str(), src, dst);
    gpuMapping_ = mapping;
    return mapping;
}

Result<const Topology*> Device::sourceTopology() {
    if (!sourceTopology_) {
        HAL_TRY_ASSIGN(ImageStore * store, images());
        if (!store->exists(kTopologyImageName))
            return makeError(ErrorCode::Image,
                             "%s has no %s: this dump was not made by the %s backend (a KFD "
                             "dump is restored by the kfd backend)",
                             store->describe().c_str(), kTopologyImageName, backendName_.c_str());
        HAL_TRY_ASSIGN(Topology topo, readTopologyImage(*store));
        sourceTopology_ = std::move(topo);
    }
    return &*sourceTopology_;
}

Result<std::map<uint32_t, uint32_t>> Device::planFromTopologyImage() {
    HAL_TRY_ASSIGN(const Topology* source, sourceTopology());
    return planGpuMapping(*source);
}

} // namespace hal
