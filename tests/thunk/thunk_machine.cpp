#include "thunk_machine.h"

#include "topology/sysfs.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace thunkfake {

std::unique_ptr<fakekfd::TestMachine> generatedMachine(unsigned gpus, uint32_t gpuIdBase) {
    auto m = std::make_unique<fakekfd::TestMachine>(fakekfd::machineSpec(gpus, gpuIdBase), "/dev");
    m->kernel->setCpuMappableBos(true);
    return m;
}

std::unique_ptr<fakekfd::TestMachine> capturedMachine(const std::string& name, std::string* why) {
    std::string root = std::string(CRIU_AMDGPU_SHARED_FIXTURES) + "/" + name;
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
        *why = "no captured topology at " + root;
        return nullptr;
    }
    auto topo = topology::readKfdTopology(root);
    if (!topo.ok()) {
        *why = topo.error().describe();
        return nullptr;
    }
    auto m = std::make_unique<fakekfd::TestMachine>(std::move(topo).value(), root, "/dev");
    m->kernel->setCpuMappableBos(true);
    return m;
}

Installed::Installed(fakekfd::TestMachine& machine) {
    machine.kernel->setCurrentPid(getpid());
    install(machine.kernel, machine.sysfsRoot);
}

Installed::~Installed() {
    uninstall();
}

void inFreshProcess(const std::function<void()>& body) {
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        alarm(120); // a hang guard: the 32-partition machine takes 5 s under ASan, 31 s under load
        try {
            body();
        } catch (const std::exception& e) {
            ADD_FAILURE() << "exception: " << e.what();
        }
        fflush(stdout);
        fflush(stderr);
        _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the scenario failed in its process (its messages are above); wait status " << status;
}

void onCapturedMachine(const std::string& name,
                       const std::function<void(fakekfd::TestMachine&)>& scenario) {
    std::string why;
    auto m = capturedMachine(name, &why);
    if (!m)
        GTEST_SKIP() << why;
    inFreshProcess([&] { scenario(*m); });
}

std::vector<HSAuint32> gpuNodes() {
    HsaSystemProperties sys{};
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtAcquireSystemProperties(&sys));
    std::vector<HSAuint32> out;
    for (HSAuint32 n = 0; n < sys.NumNodes; ++n) {
        HsaNodeProperties props{};
        EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtGetNodeProperties(n, &props));
        if (props.NumFComputeCores > 0)
            out.push_back(n);
    }
    return out;
}

} // namespace thunkfake
