// AmdgpuFileRecognizer: which files are AMD GPU device files, without a configuration. The
// /proc/devices copies follow the kernel's format (fs/proc/devices.c: "Character devices:",
// "%3d %s" lines, a blank line, "Block devices:"); the sysfs copy has the driver link the kernel
// makes (/sys/dev/char/MAJ:MIN -> the device, whose "driver" links to .../drivers/amdgpu).

#include "amdgpu_file_recognizer.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace {

using frontend::AmdgpuFileRecognizer;
using testsupport::writeFile;

constexpr const char* kProcDevices = "Character devices:\n"
                                     "  1 mem\n"
                                     " 10 misc\n"
                                     "226 drm\n"
                                     "238 kfd\n"
                                     "\n"
                                     "Block devices:\n"
                                     "  7 loop\n"
                                     "238 kfd-lookalike-block\n";

struct stat charDevice(unsigned major, unsigned minor) {
    struct stat st = {};
    st.st_mode = S_IFCHR | 0666;
    st.st_rdev = makedev(major, minor);
    return st;
}

class Recognizer : public ::testing::Test {
protected:
    void SetUp() override {
        paths_.procDevices = tmp_ / "devices";
        writeFile(paths_.procDevices, kProcDevices);
        paths_.sysDevChar = tmp_ / "dev-char";
        ASSERT_EQ(mkdir(paths_.sysDevChar.c_str(), 0700), 0);
        // 226:128 is an amdgpu render node, 226:129 another vendor's.
        driverLink("226:128", "amdgpu");
        driverLink("226:129", "i915");
    }
    void driverLink(const std::string& numbers, const std::string& driver) {
        std::string device = tmp_ / ("device-" + numbers);
        ASSERT_EQ(mkdir(device.c_str(), 0700), 0);
        ASSERT_EQ(
            symlink(("../../bus/pci/drivers/" + driver).c_str(), (device + "/driver").c_str()), 0);
        std::string entry = paths_.sysDevChar + "/" + numbers;
        ASSERT_EQ(mkdir(entry.c_str(), 0700), 0);
        ASSERT_EQ(symlink(device.c_str(), (entry + "/device").c_str()), 0);
    }

    testsupport::TempDir tmp_;
    AmdgpuFileRecognizer::Paths paths_;
};

TEST_F(Recognizer, GivenTheKfdMajor_ThenTheKfdDevice) {
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(238, 0), "/dev/kfd"), "the KFD device (char 238:0)");
}

TEST_F(Recognizer, GivenAnAmdgpuRenderNode_ThenRecognised) {
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(226, 128), "/dev/dri/renderD128"),
              "an amdgpu DRM node (char 226:128)");
}

TEST_F(Recognizer, GivenAnotherVendorsRenderNode_ThenNotOurs) {
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(226, 129), "/dev/dri/renderD129"), "");
    EXPECT_EQ(r.recognize(charDevice(226, 130), "/dev/dri/renderD130"), "") << "no sysfs entry";
}

TEST_F(Recognizer, GivenOtherCharacterDevices_ThenNotOurs) {
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(1, 3), "/dev/null"), "");
    EXPECT_EQ(r.recognize(charDevice(10, 232), "/dev/kvm"), "");
    EXPECT_EQ(r.recognize(charDevice(7, 0), "/dev/vcs"), "") << "block major 7 is not a char";
}

TEST_F(Recognizer, GivenTheKfdMajorOnARegularFile_ThenNotOurs) {
    AmdgpuFileRecognizer r({}, paths_);
    struct stat st = charDevice(238, 0);
    st.st_mode = S_IFREG | 0644;
    EXPECT_EQ(r.recognize(st, "/tmp/kfd"), "");
}

TEST_F(Recognizer, GivenNoKfdOrDrmInProcDevices_ThenNothingIsOurs) {
    writeFile(paths_.procDevices, "Character devices:\n  1 mem\n\nBlock devices:\n238 kfd\n");
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(238, 0), "/dev/kfd"), "");
    EXPECT_EQ(r.recognize(charDevice(226, 128), "/dev/dri/renderD128"), "");
}

TEST_F(Recognizer, GivenUnreadableProcDevices_ThenNothingIsOurs) {
    paths_.procDevices = tmp_ / "no-such-file";
    AmdgpuFileRecognizer r({}, paths_);
    EXPECT_EQ(r.recognize(charDevice(238, 0), "/dev/kfd"), "");
}

// The mock GPU's device nodes carry another device's numbers (the other-plugin scenario uses
// /dev/cpu_dma_latency's): only their place under a named mock root makes them ours.
TEST_F(Recognizer, GivenADeviceUnderANamedMockRoot_ThenAMockGpuDevice) {
    std::string root = tmp_ / "machine";
    ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
    AmdgpuFileRecognizer r({root + "//"}, paths_);
    EXPECT_EQ(r.recognize(charDevice(10, 62), root + "/state/contexts/3/device"),
              "a mock GPU device under " + root);
    EXPECT_EQ(r.recognize(charDevice(10, 62), "/dev/cpu_dma_latency"), "");
    EXPECT_EQ(r.recognize(charDevice(10, 62), root + "-other/device"), "")
        << "a sibling folder sharing the root's name as a prefix";
}

TEST_F(Recognizer, GivenAMockRootThatDoesNotExist_ThenPathsUnderItStillCount) {
    AmdgpuFileRecognizer r({"/no/such/root/"}, paths_);
    EXPECT_EQ(r.recognize(charDevice(10, 62), "/no/such/root/device"),
              "a mock GPU device under /no/such/root");
}

TEST_F(Recognizer, GivenAMockRootThroughASymlink_ThenComparedCanonically) {
    std::string root = tmp_ / "machine";
    std::string link = tmp_ / "link";
    ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
    ASSERT_EQ(symlink(root.c_str(), link.c_str()), 0);
    AmdgpuFileRecognizer r({link}, paths_);
    EXPECT_NE(r.recognize(charDevice(10, 62), root + "/device"), "");
}

} // namespace
