#pragma once
/// \file
/// Fake criu services for PluginSession tests: criu's log (print_on_level) recorded line by line,
/// an image directory, and the inventory functions recording their calls. criu hands plugins
/// plain function pointers, so the fakes keep their state in one process-wide FakeCriu.

#include "plugin_session.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace fakecriu {

/// One line criu's log received.
struct LogRecord {
    unsigned level = 0; ///< criu's level: 0 msg, 1 error, 2 warn, 3 info, 4 debug
    std::string text;
};

/// What the fakes saw and answer.
struct FakeCriu {
    std::vector<LogRecord> logs;
    int imageDirFd = -1;              ///< criu_get_image_dir's answer
    std::vector<std::string> added;   ///< add_inventory_plugin calls
    std::vector<std::string> checked; ///< check_and_remove_inventory_plugin calls
    bool inventoryListsPlugin = true; ///< check_and_remove_inventory_plugin's answer
    /// criu_plugin_get_options's argv, as criu 4.3 hands it ("criu-plugin", then the options).
    std::vector<std::string> pluginArgv = {"criu-plugin"};
    /// opts.final_state: 2 (TASK_DEAD) unless --leave-running (1, TASK_ALIVE).
    int finalState = 2;
    /// criu's fdstore: copies of the fds fdstore_add was given, by id (closed at TearDown).
    std::vector<int> fdstore;
    /// find_unused_fd_pid's answer (0: criu knows of no fd of the task), and the pids it was
    /// asked about.
    int unusedFd = 0;
    std::vector<int> unusedFdAskedFor;
};

/// The process-wide fake state.
FakeCriu& fake();

/// Every fake service set (print_on_level, criu_get_image_dir, both inventory functions,
/// criu_plugin_get_options, opts, fdstore_add, fdstore_get and find_unused_fd_pid).
frontend::CriuServices fakeServices();

/// The log lines at `level` or more severe (a lower number), joined by newlines.
std::string logsAtOrAbove(unsigned level);

/// The 4.1 ABI with a working inventory (criu 4.1.1 as Debian trixie ships it).
frontend::CriuAbi abi41();
/// The 3.17 ABI (10 hooks, no PAUSE/CHECKPOINT_DEVICES, no inventory).
frontend::CriuAbi abi317();
/// The 4.3 ABI (17 hooks with DUMP_FINISH, inventory, plugin options).
frontend::CriuAbi abi43();

/// A fixture owning a temp dir with an image directory whose fd the fake criu hands out, and
/// resetting the fake state and the HAL's log sink around each test.
class SessionTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    /// A host: the fake services, `abi`, `env` as the whole environment, default YAML and
    /// options files that do not exist, and /proc/devices from procDevices_ (set with
    /// setProcDevices; by default a machine without kfd or drm driver).
    frontend::PluginSession::Host host(std::map<std::string, std::string> env,
                                       frontend::CriuAbi abi) const;
    /// A directory with no backend in it.
    std::string emptyBackendDir() const;
    /// Whether the image directory holds `name`.
    bool imageExists(const std::string& name) const;
    /// Makes the host's /proc/devices hold `text`.
    void setProcDevices(const std::string& text) const;
    /// A mock machine with one GPU under tmp_/machine; returns its root.
    std::string makeMockMachine();
    /// Opens the first GPU of the mock machine `root` and gives it one BO at VA 0x100000 that
    /// holds `bytes`: the device fd in *fd, the BO handle in *bo (fails the test otherwise).
    static void openMockGpuWithBo(const std::string& root, const std::vector<std::byte>& bytes,
                                  int* fd, uint32_t* bo);
    /// Opens devNull_ (a character device) and regular_ (a regular file); TearDown closes them.
    void openPlainFiles();

    testsupport::TempDir tmp_;
    std::string imageDir_;
    std::string procDevices_;
    int devNull_ = -1;
    int regular_ = -1;
};

} // namespace fakecriu
