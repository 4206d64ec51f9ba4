// AMD's thunk starting up on the fake machine: hsaKmtOpenKFD and the topology it reads.
#include "thunk_machine.h"

#include <gtest/gtest.h>

using namespace thunkfake;

namespace {

void opensAndReadsTopology(fakekfd::TestMachine& m) {
    Installed routes(m);
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtOpenKFD());
    HsaVersionInfo version{};
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtGetVersion(&version));
    EXPECT_EQ(version.KernelInterfaceMajorVersion, 1u);
    EXPECT_EQ(version.KernelInterfaceMinorVersion, 11u);
    HsaSystemProperties sys{};
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtAcquireSystemProperties(&sys));
    EXPECT_EQ(sys.NumNodes, m.topology.nodes.size());
    std::vector<int> minors;
    std::vector<uint32_t> locations;
    for (HSAuint32 n = 0; n < sys.NumNodes; ++n) {
        HsaNodeProperties props{};
        ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtGetNodeProperties(n, &props));
        if (props.NumFComputeCores > 0) {
            minors.push_back(props.DrmRenderMinor);
            locations.push_back(props.LocationId);
        }
    }
    std::vector<int> expectedMinors;
    std::vector<uint32_t> expectedLocations;
    for (const topology::Node* g : m.topology.gpus()) {
        expectedMinors.push_back(g->renderMinor());
        expectedLocations.push_back(static_cast<uint32_t>(g->prop("location_id")));
    }
    EXPECT_EQ(minors, expectedMinors);
    EXPECT_EQ(locations, expectedLocations);
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtReleaseSystemProperties());
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtCloseKFD());
    EXPECT_TRUE(m.kernel->unservedIoctls().empty());
}

} // namespace

TEST(ThunkStart, GivenAGeneratedMachine_WhenOpened_ThenTheThunkSeesItsNodesAndRenderNodes) {
    inFreshProcess([] {
        auto m = generatedMachine(2, 0x2000);
        opensAndReadsTopology(*m);
    });
}

TEST(ThunkStart, GivenACapturedMi308xMachine_WhenOpened_ThenTheThunkSeesItsNodesAndRenderNodes) {
    onCapturedMachine("mi308x-8card-cpx", opensAndReadsTopology);
}

TEST(ThunkStart, GivenNoKfd_WhenOpened_ThenTheThunkReportsNoKernelChannel) {
    inFreshProcess([] {
        auto m = generatedMachine(1);
        m->kernel->setKfdOpenError(-ENOENT);
        Installed routes(*m);
        EXPECT_EQ(HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, hsaKmtOpenKFD());
    });
}
