// AMD's thunk starting up on the fake machine: hsaKmtOpenKFD and the topology it reads.
#include "thunk_machine.h"

#include <gtest/gtest.h>

using namespace thunkfake;

TEST(ThunkStart, GivenAGeneratedMachine_WhenOpened_ThenTheThunkSeesItsNodesAndRenderNodes) {
    auto m = generatedMachine(2, 0x2000);
    Installed routes(*m);
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtOpenKFD());
    HsaVersionInfo version{};
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtGetVersion(&version));
    EXPECT_EQ(version.KernelInterfaceMajorVersion, 1u);
    HsaSystemProperties sys{};
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtAcquireSystemProperties(&sys));
    EXPECT_EQ(sys.NumNodes, m->topology.nodes.size());
    std::vector<int> minors;
    for (HSAuint32 n = 0; n < sys.NumNodes; ++n) {
        HsaNodeProperties props{};
        ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtGetNodeProperties(n, &props));
        if (props.NumFComputeCores > 0)
            minors.push_back(props.DrmRenderMinor);
    }
    std::vector<int> expected;
    for (const hal::Node* g : m->topology.gpus())
        expected.push_back(g->renderMinor());
    EXPECT_EQ(minors, expected);
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtReleaseSystemProperties());
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtCloseKFD());
}
