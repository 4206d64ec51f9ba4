#include "mockgpu/state_codec.h"

#include "formats/proto_image.h"

#include "criu-amdgpu.pb-c.h"

#include <vector>

namespace mock {
namespace {

/// The protobuf-c view of a ContextState; owns the entries its pointers reach.
class StateMessage {
public:
    explicit StateMessage(const ContextState& s)
        : bos_(s.bos.size()), queues_(s.queues.size()), events_(s.events.size()) {
        mock_context_state__init(&msg_);
        msg_.has_gpu_id = msg_.has_user_gpu_id = msg_.has_render_minor = true;
        msg_.has_owner_pid = msg_.has_restore_session = msg_.has_paused = true;
        msg_.has_next_handle = msg_.has_next_queue = msg_.has_next_event = true;
        msg_.gpu_id = s.gpuId;
        msg_.user_gpu_id = s.userGpuId;
        msg_.render_minor = s.renderMinor;
        msg_.owner_pid = s.ownerPid;
        msg_.restore_session = s.restoreSession;
        msg_.paused = s.paused;
        msg_.next_handle = s.nextHandle;
        msg_.next_queue = s.nextQueue;
        msg_.next_event = s.nextEvent;
        if (!s.devDir.empty())
            msg_.dev_dir = const_cast<char*>(s.devDir.c_str());
        entries(bos_, boPtrs_, s.bos, mock_buffer_object__init,
                [](MockBufferObject* b, const BufferObject& in) {
                    b->has_handle = b->has_size = b->has_gpu_va = b->has_flags = true;
                    b->has_imported = in.imported;
                    b->imported = in.imported;
                    b->handle = in.handle;
                    b->size = in.size;
                    b->gpu_va = in.gpuVa;
                    b->flags = in.flags;
                });
        entries(queues_, queuePtrs_, s.queues, mock_queue__init, [](MockQueue* q, const Queue& in) {
            q->has_id = q->has_submitted = q->has_completed = true;
            q->id = in.id;
            q->submitted = in.submitted;
            q->completed = in.completed;
        });
        entries(events_, eventPtrs_, s.events, mock_event__init, [](MockEvent* e, const Event& in) {
            e->has_id = e->has_signals = true;
            e->id = in.id;
            e->signals = in.signals;
        });
        msg_.n_bos = boPtrs_.size();
        msg_.bos = boPtrs_.data();
        msg_.n_queues = queuePtrs_.size();
        msg_.queues = queuePtrs_.data();
        msg_.n_events = eventPtrs_.size();
        msg_.events = eventPtrs_.data();
    }
    StateMessage(const StateMessage&) = delete;
    StateMessage& operator=(const StateMessage&) = delete;

    MockContextState* get() { return &msg_; }

private:
    /// Fills `store` (sized to `from`) with initialised messages set by `set`, and `ptrs` with
    /// their addresses, as a repeated field wants them.
    template <class Msg, class From, class Set>
    static void entries(std::vector<Msg>& store, std::vector<Msg*>& ptrs,
                        const std::vector<From>& from, void (*init)(Msg*), Set set) {
        for (size_t i = 0; i < from.size(); ++i) {
            init(&store[i]);
            set(&store[i], from[i]);
            ptrs.push_back(&store[i]);
        }
    }

    MockContextState msg_;
    std::vector<MockBufferObject> bos_;
    std::vector<MockQueue> queues_;
    std::vector<MockEvent> events_;
    std::vector<MockBufferObject*> boPtrs_;
    std::vector<MockQueue*> queuePtrs_;
    std::vector<MockEvent*> eventPtrs_;
};

base::Result<ContextState> fromMessage(const MockContextState& m, const std::string& what) {
    if (!m.has_gpu_id)
        return base::makeError(base::ErrorCode::Image, "%s: not a mock GPU context state (no GPU)",
                               what.c_str());
    ContextState s;
    s.gpuId = m.gpu_id;
    s.userGpuId = m.user_gpu_id;
    s.renderMinor = m.has_render_minor ? m.render_minor : -1;
    s.ownerPid = m.owner_pid;
    s.restoreSession = m.restore_session;
    s.paused = m.paused;
    s.nextHandle = m.has_next_handle ? m.next_handle : 1;
    s.nextQueue = m.has_next_queue ? m.next_queue : 1;
    s.nextEvent = m.has_next_event ? m.next_event : 1;
    if (m.dev_dir)
        s.devDir = m.dev_dir;
    for (size_t i = 0; i < m.n_bos; ++i)
        s.bos.push_back(BufferObject{m.bos[i]->handle, m.bos[i]->size, m.bos[i]->gpu_va,
                                     m.bos[i]->flags, m.bos[i]->imported != 0});
    for (size_t i = 0; i < m.n_queues; ++i)
        s.queues.push_back(Queue{m.queues[i]->id, m.queues[i]->submitted, m.queues[i]->completed});
    for (size_t i = 0; i < m.n_events; ++i)
        s.events.push_back(Event{m.events[i]->id, m.events[i]->signals});
    return s;
}

} // namespace

std::string encodeState(const ContextState& state) {
    StateMessage msg(state);
    return formats::packProto(&msg.get()->base);
}

base::Result<ContextState> decodeState(const std::string& bytes, const std::string& what) {
    auto msg = formats::unpackProto<MockContextState>(bytes, &mock_context_state__descriptor, what);
    if (!msg.ok())
        return base::makeError(base::ErrorCode::Image, "%s: not a mock GPU context state",
                               what.c_str());
    return fromMessage(*msg.value(), what);
}

std::string encodeRenderNodeState(const RenderNodeState& rn) {
    StateMessage state(rn.state);
    MockRenderNodeState msg;
    mock_render_node_state__init(&msg);
    msg.has_context_id = true;
    msg.context_id = rn.contextId;
    msg.state = state.get();
    return formats::packProto(&msg.base);
}

std::optional<RenderNodeState> decodeRenderNodeState(const std::string& privData) {
    if (privData.empty())
        return std::nullopt;
    auto msg = formats::unpackProto<MockRenderNodeState>(
        privData, &mock_render_node_state__descriptor, "priv_data");
    if (!msg.ok() || !msg.value()->has_context_id || !msg.value()->state)
        return std::nullopt;
    auto state = fromMessage(*msg.value()->state, "priv_data");
    if (!state.ok())
        return std::nullopt;
    return RenderNodeState{msg.value()->context_id, std::move(state).value()};
}

} // namespace mock
