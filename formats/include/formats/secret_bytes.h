#pragma once
/// \file
/// Key material in memory (issue 52): the bytes of a private key file, a checkpoint's master key
/// and the keys derived from it live on pages of their own, which are left out of core dumps
/// (`MADV_DONTDUMP`: a crash of criu or of the tool does not write them to disk) and zeroed with
/// `OPENSSL_cleanse` (which the compiler cannot leave out) when dropped. The last few mappings
/// dropped are kept, zeroed and still advised, for the next keys; older ones are unmapped.

#include "base/result.h"

#include <cstddef>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace formats {

using base::Result;

/// Bytes of key material, owned (see above). Empty when default-constructed or moved from.
class SecretBytes {
public:
    SecretBytes() = default;
    /// `size` zero bytes on pages of their own, advised out of core dumps.
    static Result<SecretBytes> allocate(size_t size);
    ~SecretBytes() { drop(); }
    SecretBytes(SecretBytes&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
          mapped_(std::exchange(other.mapped_, 0)) {}
    SecretBytes& operator=(SecretBytes&& other) noexcept {
        if (this != &other) {
            drop();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
            mapped_ = std::exchange(other.mapped_, 0);
        }
        return *this;
    }
    SecretBytes(const SecretBytes&) = delete;
    SecretBytes& operator=(const SecretBytes&) = delete;

    std::span<std::byte> bytes() { return {data_, size_}; }
    std::span<const std::byte> bytes() const { return {data_, size_}; }
    std::byte* data() { return data_; }
    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

private:
    /// Zeroes the bytes and gives the pages back (to the pool of dropped pages, or unmapped).
    void drop();

    std::byte* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0; ///< bytes mapped: size_ rounded up to pages
};

/// One value of key material of type T (an array of bytes, a struct of them) in SecretBytes.
template <class T> class Secret {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

public:
    Secret() = default;
    /// A zero T.
    static Result<Secret> make() {
        HAL_TRY_ASSIGN(SecretBytes bytes, SecretBytes::allocate(sizeof(T)));
        new (bytes.data()) T{};
        return Secret(std::move(bytes));
    }
    /// A copy of `value` (the caller wipes its own).
    static Result<Secret> of(const T& value) {
        HAL_TRY_ASSIGN(Secret s, make());
        *s = value;
        return s;
    }
    T& operator*() { return *std::launder(reinterpret_cast<T*>(bytes_.data())); }
    const T& operator*() const { return *std::launder(reinterpret_cast<const T*>(bytes_.data())); }
    T* operator->() { return &**this; }
    const T* operator->() const { return &**this; }
    explicit operator bool() const { return !bytes_.empty(); }

private:
    explicit Secret(SecretBytes bytes) : bytes_(std::move(bytes)) {}
    SecretBytes bytes_;
};

/// Zeroes `bytes` so that the compiler cannot leave it out (OPENSSL_cleanse): for the copies of
/// key material that cannot live in SecretBytes (a library's output, a buffer on the stack).
void wipeSecret(std::span<std::byte> bytes);

} // namespace formats
