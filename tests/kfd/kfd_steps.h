#pragma once
/// \file
/// The steps of a KFD checkpoint as criu takes them, on a fake machine, shared by the KFD tests.
#include "kfd_test_machine.h"

#include "formats/image_store.h"

#include <memory>

namespace fakekfd {

inline constexpr uint32_t kKfdFileId = 10;

/// A process with every kind of BO on each of `gpus` GPUs.
ProcessSpec everyKindOfBo(unsigned gpus);

/// Dumps `pid` as criu 4.0+ does (PAUSE_DEVICES, CHECKPOINT_DEVICES, DUMP_EXT_FILE per file) or
/// as older criu does (DUMP_EXT_FILE only): KFD file kKfdFileId, render nodes after it.
void dump(TestMachine& m, formats::ImageStore& store, int pid, bool pauseHooks);

struct Restored {
    std::unique_ptr<kfd::KfdDevice> dev;
    int kfdFd = -1;
};

/// Restores file id kKfdFileId and the render nodes as criu does, up to (not including) RESUME.
Restored restore(TestMachine& m, formats::ImageStore& store, int pid, unsigned renderFiles);

/// The restored process's BOs and objects are those of the dumped one, byte for byte.
void expectSameBos(const FakeProcess& before, const FakeProcess& after);

} // namespace fakekfd
