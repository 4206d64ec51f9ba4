#pragma once
// Little-endian fields of our own formats (the chunk and sealed frames), read and written byte by
// byte: private to formats/.

#include <cstddef>
#include <cstdint>
#include <string>

namespace formats::le {

template <typename T> void put(std::byte* at, T value) {
    for (size_t i = 0; i < sizeof(T); ++i)
        at[i] = static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
}

template <typename T> T get(const std::byte* at) {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
        v |= static_cast<uint64_t>(at[i]) << (8 * i);
    return static_cast<T>(v);
}

/// Appends `value` to `out`.
template <typename T> void append(std::string& out, T value) {
    for (size_t i = 0; i < sizeof(T); ++i)
        out.push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

} // namespace formats::le
