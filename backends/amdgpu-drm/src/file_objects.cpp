#include "file_objects.h"

#include <functional>

namespace drm {

using base::ErrorCode;
using base::makeError;

namespace {

/// The numbers 1, 2, ... of `kind` whose `probe` answers true, until more numbers were unused
/// than kind.maxGaps (any object above could not be restored at its number).
base::Result<std::vector<uint32_t>>
probeNumbers(const NumberedKind& kind, const std::string& file,
             const std::function<base::Result<bool>(uint32_t)>& probe) {
    std::vector<uint32_t> found;
    uint32_t unused = 0;
    for (uint64_t n = 1; n <= kind.highest && unused <= kind.maxGaps; ++n) {
        HAL_TRY_ASSIGN(bool held, probe(static_cast<uint32_t>(n)));
        if (!held) {
            ++unused;
            continue;
        }
        if (found.size() == kind.maxObjects)
            return makeError(ErrorCode::NotSupported,
                             "%s holds more than %u %ss, more than a restore makes in one file",
                             file.c_str(), kind.maxObjects, kind.object);
        found.push_back(static_cast<uint32_t>(n));
    }
    return found;
}

std::string lostReasons(uint64_t flags) {
    std::string out;
    auto add = [&out](const char* what) { out += out.empty() ? what : std::string(", ") + what; };
    if (flags & AMDGPU_CTX_QUERY2_FLAGS_GUILTY)
        add("guilty of a GPU hang");
    if (flags & AMDGPU_CTX_QUERY2_FLAGS_RESET)
        add("reset since it was made");
    if (flags & AMDGPU_CTX_QUERY2_FLAGS_VRAMLOST)
        add("VRAM-lost");
    if (flags & kCtxQuery2ResetInProgress)
        add("in a GPU reset");
    return out;
}

} // namespace

base::Result<std::vector<formats::DrmCtxEntry>> findContexts(DrmCalls& calls, int fd,
                                                             const std::string& file) {
    std::vector<formats::DrmCtxEntry> contexts;
    auto probe = [&](uint32_t id) -> base::Result<bool> {
        HAL_TRY_ASSIGN(std::optional<uint64_t> flags, calls.ctxQueryState2(fd, id));
        if (!flags)
            return false;
        if (*flags & kLostContextFlags)
            return makeError(ErrorCode::NotSupported,
                             "context %u of %s cannot be restored: the kernel reports it %s "
                             "(QUERY_STATE2 flags 0x%llx), which a new context would not be",
                             id, file.c_str(), lostReasons(*flags).c_str(),
                             static_cast<unsigned long long>(*flags));
        contexts.push_back(formats::DrmCtxEntry{id, *flags});
        return true;
    };
    HAL_TRY(probeNumbers(kContextIds, file, probe));
    return contexts;
}

base::Result<std::vector<formats::DrmSyncobjEntry>>
findSyncobjs(DrmCalls& calls, int fd, const std::string& file, uint64_t deadlineNs) {
    std::vector<formats::DrmSyncobjEntry> syncobjs;
    auto pending = [&](uint32_t handle, const std::string& what) {
        return makeError(ErrorCode::Kernel,
                         "syncobj %u of %s cannot be saved: %s is still pending at the "
                         "deadline (GPU work submitted before the process was frozen has not "
                         "finished); check the GPU for a hang (dmesg) and retry",
                         handle, file.c_str(), what.c_str());
    };
    auto probe = [&](uint32_t handle) -> base::Result<bool> {
        HAL_TRY_ASSIGN(std::optional<uint64_t> value, calls.syncobjQuery(fd, handle, false));
        if (!value)
            return false;
        HAL_TRY_ASSIGN(std::optional<uint64_t> last, calls.syncobjQuery(fd, handle, true));
        formats::DrmSyncobjEntry entry;
        entry.handle = handle;
        if (last.value_or(0) > 0) {
            // A timeline: every point submitted signals before its value is the state.
            if (*value < *last) {
                HAL_TRY_ASSIGN(auto state, calls.syncobjWait(fd, handle, *last, deadlineNs));
                if (state != DrmCalls::FenceState::Signaled)
                    return pending(handle, base::strFormat("timeline point %llu",
                                                           static_cast<unsigned long long>(*last)));
                HAL_TRY_ASSIGN(value, calls.syncobjQuery(fd, handle, false));
            }
            entry.timelinePoint = value.value_or(0);
        } else {
            HAL_TRY_ASSIGN(auto state, calls.syncobjWait(fd, handle, 0, deadlineNs));
            if (state == DrmCalls::FenceState::Pending)
                return pending(handle, "its fence");
            entry.signaled = state == DrmCalls::FenceState::Signaled;
        }
        syncobjs.push_back(entry);
        return true;
    };
    HAL_TRY(probeNumbers(kSyncobjHandles, file, probe));
    return syncobjs;
}

base::Result<FileObjectsPlan> planFileObjects(const formats::RenderNodeImage& image,
                                              const std::string& imageName) {
    FileObjectsPlan plan;
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < image.contexts.size(); ++i) {
        const formats::DrmCtxEntry& ctx = image.contexts[i];
        if (ctx.query2Flags & kLostContextFlags)
            return makeError(ErrorCode::Image,
                             "%s: context %zu (id %u) has query2_flags 0x%llx: it was %s, which "
                             "a new context would not be",
                             imageName.c_str(), i, ctx.id,
                             static_cast<unsigned long long>(ctx.query2Flags),
                             lostReasons(ctx.query2Flags).c_str());
        ids.push_back(ctx.id);
    }
    HAL_TRY_ASSIGN(plan.contexts, planNumbers(ids, kContextIds, imageName));
    std::vector<uint32_t> handles;
    for (const formats::DrmSyncobjEntry& syncobj : image.syncobjs)
        handles.push_back(syncobj.handle);
    HAL_TRY_ASSIGN(plan.syncobjs, planNumbers(handles, kSyncobjHandles, imageName));
    return plan;
}

namespace {

/// Makes numbers 1..table.size() of a kind in ascending order with `make` (the object at each
/// number, or a filler), checks each is the number planned, then frees the fillers.
base::Result<void>
fillNumbers(const std::vector<std::optional<uint32_t>>& table, const NumberedKind& kind,
            const std::string& imageName,
            const std::function<base::Result<uint32_t>(std::optional<uint32_t>)>& make,
            const std::function<base::Result<void>(uint32_t)>& release) {
    std::vector<uint32_t> fillers;
    for (uint32_t n = 1; n <= table.size(); ++n) {
        const std::optional<uint32_t>& index = table[n - 1];
        std::string what =
            index ? base::strFormat("%s %u (%s %u)", kind.object, *index, kind.number, n)
                  : base::strFormat("the filler of %s %u", kind.number, n);
        HAL_TRY_ASSIGN_CONTEXT(uint32_t got, make(index), "while recreating %s of %s", what.c_str(),
                               imageName.c_str());
        if (got != n)
            return makeError(ErrorCode::Kernel,
                             "%s: the kernel gave %s %u to %s: it did not hand out the lowest "
                             "free %s, so the checkpointed %s cannot be reproduced",
                             imageName.c_str(), kind.number, got, what.c_str(), kind.number,
                             kind.plural);
        if (!index)
            fillers.push_back(n);
    }
    for (uint32_t n : fillers)
        HAL_TRY_CONTEXT(release(n), "while freeing the filler of %s %u of %s", kind.number, n,
                        imageName.c_str());
    return base::success();
}

} // namespace

base::Result<void> restoreFileObjects(DrmCalls& calls, int fd,
                                      const formats::RenderNodeImage& image,
                                      const FileObjectsPlan& plan, const std::string& imageName) {
    HAL_TRY(fillNumbers(
        plan.contexts, kContextIds, imageName,
        [&](std::optional<uint32_t>) { return calls.ctxAlloc(fd); },
        [&](uint32_t id) { return calls.ctxFree(fd, id); }));
    HAL_TRY(fillNumbers(
        plan.syncobjs, kSyncobjHandles, imageName,
        [&](std::optional<uint32_t> index) -> base::Result<uint32_t> {
            bool signaled = index && image.syncobjs[*index].signaled;
            HAL_TRY_ASSIGN(uint32_t handle, calls.syncobjCreate(fd, signaled));
            if (index && image.syncobjs[*index].timelinePoint)
                HAL_TRY(
                    calls.syncobjTimelineSignal(fd, handle, *image.syncobjs[*index].timelinePoint));
            return handle;
        },
        [&](uint32_t handle) { return calls.syncobjDestroy(fd, handle); }));
    return base::success();
}

} // namespace drm
