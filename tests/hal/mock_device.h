#pragma once
/// \file
/// A hal::Device whose backend parts are gmock methods, to test the phase checks of the public
/// methods in isolation.

#include "hal/device.h"
#include "settings/settings.h"

#include <gmock/gmock.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace haltest {

/// Every `...Impl` of hal::Device as a mock; the protected helpers made callable.
class MockDevice : public hal::Device {
public:
    explicit MockDevice(const config::Settings* settings, hal::ImageStore* images = nullptr)
        : hal::Device("test", hal::DeviceEnv{settings, images}) {}

    MOCK_METHOD(hal::Result<bool>, claimFileImpl, (const hal::FileRef&), (override));
    MOCK_METHOD(hal::Result<bool>, claimVmaImpl, (const hal::VmaRef&), (override));
    MOCK_METHOD(hal::Result<int>, processOfFileImpl, (const hal::FileRef&), (override));
    MOCK_METHOD(hal::Result<bool>, pauseImpl, (int), (override));
    MOCK_METHOD(hal::Result<void>, collectObjectsImpl, (int), (override));
    MOCK_METHOD(hal::Result<void>, streamContentsImpl, (int), (override));
    MOCK_METHOD(hal::Result<void>, writeFileImagesImpl, (const hal::FileRef&, int), (override));
    MOCK_METHOD(hal::Result<void>, unpauseImpl, (int), (override));

    MOCK_METHOD(hal::Result<bool>, ownsImageImpl, (uint32_t), (override));
    MOCK_METHOD(hal::Result<int>, restoreFileImpl, (uint32_t), (override));
    MOCK_METHOD((hal::Result<std::optional<hal::VmaAnswer>>), updateVmaMapImpl,
                (const hal::VmaQuery&), (override));
    MOCK_METHOD(hal::Result<void>, postForkingImpl, (), (override));
    MOCK_METHOD(hal::Result<bool>, resumeImpl, (int), (override));
    MOCK_METHOD(hal::Result<void>, abortRestoreImpl, (), (override));

    MOCK_METHOD(hal::Result<hal::Topology>, localTopologyImpl, (), (override));
    MOCK_METHOD((hal::Result<std::optional<std::set<uint32_t>>>), usableGpuIdsImpl, (), (override));

    using hal::Device::images;
    using hal::Device::planGpuMapping;
    using hal::Device::restoreChainOf;
};

/// A file of the render node kind with criu id `id` and fd `fd`.
inline hal::FileRef deviceFile(uint32_t id, int fd = 5, std::string path = "/dev/dri/renderD128") {
    hal::FileRef f;
    f.fd = fd;
    f.id = id;
    f.path = std::move(path);
    return f;
}

/// An error to inject from an Impl.
inline hal::Error injected(const char* what) {
    return hal::makeError(hal::ErrorCode::Injected, "%s", what);
}

} // namespace haltest
