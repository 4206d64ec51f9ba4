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
    explicit MockDevice(const settings::Settings* settings, formats::ImageStore* images = nullptr)
        : hal::Device("test", hal::DeviceEnv{settings, images}) {}

    MOCK_METHOD(base::Result<bool>, claimFileImpl, (const hal::FileRef&), (override));
    MOCK_METHOD(base::Result<bool>, claimVmaImpl, (const hal::VmaRef&), (override));
    MOCK_METHOD(base::Result<int>, processOfFileImpl, (const hal::FileRef&), (override));
    MOCK_METHOD(base::Result<bool>, pauseImpl, (int), (override));
    MOCK_METHOD(base::Result<void>, collectObjectsImpl, (int), (override));
    MOCK_METHOD(base::Result<void>, streamContentsImpl, (int), (override));
    MOCK_METHOD(base::Result<void>, writeFileImagesImpl, (const hal::FileRef&, int), (override));
    MOCK_METHOD(base::Result<void>, unpauseImpl, (int), (override));

    MOCK_METHOD(base::Result<bool>, ownsImageImpl, (uint32_t), (override));
    MOCK_METHOD(base::Result<int>, restoreFileImpl, (uint32_t), (override));
    MOCK_METHOD((base::Result<std::optional<hal::VmaAnswer>>), updateVmaMapImpl,
                (const hal::VmaQuery&), (override));
    MOCK_METHOD(base::Result<void>, postForkingImpl, (), (override));
    MOCK_METHOD(base::Result<bool>, resumeImpl, (int), (override));
    MOCK_METHOD(base::Result<void>, abortRestoreImpl, (), (override));

    MOCK_METHOD(base::Result<topology::Topology>, localTopologyImpl, (), (override));
    MOCK_METHOD((base::Result<std::optional<std::set<uint32_t>>>), usableGpuIdsImpl, (),
                (override));

    using hal::Device::images;
    using hal::Device::planGpuMapping;
    using hal::Device::restoreChainOf;
    using hal::Device::saveBoContents;
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
inline base::Error injected(const char* what) {
    return base::makeError(base::ErrorCode::Injected, "%s", what);
}

} // namespace haltest
