// The mock context state as protobuf (mock_context_state, mock_render_node_state): the driver's
// state file and the priv_data of the mock backend's render-node images.

#include "mock_fixture.h"

#include "mockgpu/state_codec.h"

#include "criu-amdgpu.pb-c.h"

namespace {

using mocktest::errorCode;
using mocktest::errorText;
using testing::HasSubstr;

mock::ContextState sampleState() {
    mock::ContextState s;
    s.gpuId = 0x59ea;
    s.userGpuId = 0x1002;
    s.renderMinor = 130;
    s.ownerPid = 4242;
    s.restoreSession = 0xfeedull << 32;
    s.paused = true;
    s.nextHandle = 9;
    s.nextQueue = 4;
    s.nextEvent = 7;
    s.bos = {{1, 1ull << 33, 0x7f0000000000ull, 1}, {8, 4096, 0x1000, 2}};
    s.queues = {{3, 1ull << 40, (1ull << 40) - 1}};
    s.events = {{2, 17}, {6, 0}};
    return s;
}

void expectSameState(const mock::ContextState& a, const mock::ContextState& b) {
    EXPECT_EQ(a.gpuId, b.gpuId);
    EXPECT_EQ(a.userGpuId, b.userGpuId);
    EXPECT_EQ(a.renderMinor, b.renderMinor);
    EXPECT_EQ(a.ownerPid, b.ownerPid);
    EXPECT_EQ(a.restoreSession, b.restoreSession);
    EXPECT_EQ(a.paused, b.paused);
    EXPECT_EQ(a.nextHandle, b.nextHandle);
    EXPECT_EQ(a.nextQueue, b.nextQueue);
    EXPECT_EQ(a.nextEvent, b.nextEvent);
    ASSERT_EQ(a.bos.size(), b.bos.size());
    for (size_t i = 0; i < a.bos.size(); ++i) {
        EXPECT_EQ(a.bos[i].handle, b.bos[i].handle);
        EXPECT_EQ(a.bos[i].size, b.bos[i].size);
        EXPECT_EQ(a.bos[i].gpuVa, b.bos[i].gpuVa);
        EXPECT_EQ(a.bos[i].flags, b.bos[i].flags);
    }
    ASSERT_EQ(a.queues.size(), b.queues.size());
    EXPECT_EQ(a.queues[0].id, b.queues[0].id);
    EXPECT_EQ(a.queues[0].submitted, b.queues[0].submitted);
    EXPECT_EQ(a.queues[0].completed, b.queues[0].completed);
    ASSERT_EQ(a.events.size(), b.events.size());
    EXPECT_EQ(a.events[0].signals, b.events[0].signals);
    EXPECT_EQ(a.events[1].id, b.events[1].id);
}

TEST(MockStateCodec, GivenAFullState_WhenEncodedAndDecoded_ThenEveryFieldSurvives) {
    mock::ContextState in = sampleState();
    auto out = mock::decodeState(mock::encodeState(in), "state");
    ASSERT_TRUE(out.ok()) << out.error().describe();
    expectSameState(in, out.value());
}

TEST(MockStateCodec,
     GivenTheEncodedBytes_WhenUnpackedWithTheProjectsSchema_ThenTheyAreAMockContextState) {
    std::string bytes = mock::encodeState(sampleState());
    MockContextState* m = mock_context_state__unpack(
        nullptr, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->gpu_id, 0x59eau);
    EXPECT_EQ(m->render_minor, 130);
    ASSERT_EQ(m->n_bos, 2u);
    EXPECT_EQ(m->bos[0]->size, 1ull << 33);
    mock_context_state__free_unpacked(m, nullptr);
}

TEST(MockStateCodec, GivenBytesThatAreNoState_WhenDecoded_ThenAnImageErrorNamesTheFile) {
    for (std::string bad :
         {std::string("mockgpu-context 1\ngpu_id 5\n"), std::string("\xff\xff"), std::string()}) {
        auto out = mock::decodeState(bad, "ROOT/state/contexts/3/state");
        EXPECT_EQ(errorCode(out), base::ErrorCode::Image);
        EXPECT_THAT(errorText(out), HasSubstr("ROOT/state/contexts/3/state"));
        EXPECT_THAT(errorText(out), HasSubstr("not a mock GPU context state"));
    }
}

TEST(MockStateCodec, GivenARenderNodeState_WhenEncodedAndDecoded_ThenTheContextIdAndStateSurvive) {
    auto out = mock::decodeRenderNodeState(
        mock::encodeRenderNodeState(mock::RenderNodeState{77, sampleState()}));
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->contextId, 77u);
    expectSameState(sampleState(), out->state);
}

TEST(MockStateCodec, GivenPrivDataOfAnotherWriter_WhenDecodedAsRenderNodeState_ThenItIsNotClaimed) {
    EXPECT_FALSE(mock::decodeRenderNodeState(""));
    EXPECT_FALSE(mock::decodeRenderNodeState("amdgpu-drm-shares 1 1\n12 f\n"));
    EXPECT_FALSE(mock::decodeRenderNodeState(std::string("\x08\x05", 2))) // context id, no state
        << "a context id alone is not the mock's state";
    // A bare context state (no context id) is not a render node's priv_data either.
    EXPECT_FALSE(mock::decodeRenderNodeState(mock::encodeState(sampleState())));
}

} // namespace
