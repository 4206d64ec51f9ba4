#include "kfd_test_machine.h"

#include "topology/sysfs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sys/sysmacros.h>

namespace fakekfd {

topology::SyntheticSpec machineSpec(unsigned gpus, uint32_t base, int minorBase) {
    topology::SyntheticSpec spec;
    spec.gpus = gpus;
    spec.gpuIdBase = base;
    spec.renderMinorBase = minorBase;
    return spec;
}

TestMachine::TestMachine(const topology::SyntheticSpec& spec, const std::string& devRoot)
    : topology(topology::makeSyntheticTopology(spec)) {
    sysfsRoot = dir / "sysfs";
    auto written = topology::writeKfdTopology(topology, sysfsRoot);
    EXPECT_TRUE(written.ok()) << written.error().describe();
    settings.kfdSysfsRoot = sysfsRoot;
    settings.devRoot = devRoot;
    shmDir = dir / "shm";
    std::filesystem::create_directories(shmDir);
    procRoot = dir / "proc";
    kernel = std::make_shared<FakeKernel>(topology, devRoot);
}

TestMachine::TestMachine(topology::Topology topo, const std::string& sysfs,
                         const std::string& devRoot)
    : topology(std::move(topo)), sysfsRoot(sysfs) {
    settings.kfdSysfsRoot = sysfsRoot;
    settings.devRoot = devRoot;
    shmDir = dir / "shm";
    std::filesystem::create_directories(shmDir);
    procRoot = dir / "proc";
    kernel = std::make_shared<FakeKernel>(topology, devRoot);
}

std::unique_ptr<kfd::KfdDevice> TestMachine::device(formats::ImageStore* images) {
    hal::DeviceEnv env;
    env.settings = &settings;
    env.images = images;
    kfd::KfdDeviceOptions options;
    options.shmDir = shmDir;
    options.procRoot = procRoot;
    return std::make_unique<kfd::KfdDevice>(env, kernel, options);
}

hal::FileRef TestMachine::fileRef(int pid, int taskFd, uint32_t id) {
    hal::FileRef f;
    f.fd = kernel->criuCopyOf(pid, taskFd);
    f.id = id;
    EXPECT_EQ(0, kernel->fstat(f.fd, &f.st));
    if (major(f.st.st_rdev) == kfd::kDrmMajor)
        f.path = "/dev/dri/renderD" + std::to_string(minor(f.st.st_rdev));
    else
        f.path = "/dev/kfd";
    return f;
}

std::vector<std::vector<std::byte>> contentsOf(const FakeProcess& p) {
    std::vector<std::vector<std::byte>> out;
    for (const auto& bo : p.bos) {
        if (bo->mem.fd < 0) {
            out.push_back(bo->data);
            continue;
        }
        std::vector<std::byte> bytes(bo->size);
        bo->read(0, bytes.data(), bytes.size());
        out.push_back(std::move(bytes));
    }
    return out;
}

} // namespace fakekfd
