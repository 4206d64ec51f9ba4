#pragma once
/// \file
/// Result<T> and Error: how every layer of the project reports failure without exceptions.
/// An Error carries a code from one table, the errno that caused it (if any), a message, and a
/// chain of context lines that each layer adds on the way up ("while restoring BO 3 of GPU
/// 0x59ea").

#include <cerrno>
#include <cstdarg>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace base {

/// The table of error codes: name and a short description used in messages.
#define HAL_ERROR_CODES(X)                                                                         \
    X(InvalidArgument, "invalid argument")                                                         \
    X(PhaseOrder, "operation called out of order")                                                 \
    X(NotPresent, "device or backend not present")                                                 \
    X(NotSupported, "not supported")                                                               \
    X(NotFound, "not found")                                                                       \
    X(Io, "I/O error")                                                                             \
    X(Kernel, "kernel call failed")                                                                \
    X(Image, "bad checkpoint image")                                                               \
    X(Topology, "topology error")                                                                  \
    X(NoMapping, "no GPU mapping")                                                                 \
    X(OutOfMemory, "out of memory")                                                                \
    X(Config, "configuration error")                                                               \
    X(Loader, "backend loading error")                                                             \
    X(Injected, "injected fault")                                                                  \
    X(Internal, "internal error")

/// Error codes, one per row of HAL_ERROR_CODES.
enum class ErrorCode {
#define HAL_ERROR_ENUM(name, text) name,
    HAL_ERROR_CODES(HAL_ERROR_ENUM)
#undef HAL_ERROR_ENUM
};

/// Name of an error code, e.g. "NoMapping".
const char* errorCodeName(ErrorCode code);
/// Short description of an error code, e.g. "no GPU mapping".
const char* errorCodeText(ErrorCode code);

/// printf-style formatting into a std::string.
std::string strFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/// vprintf-style formatting into a std::string.
std::string strFormatV(const char* fmt, va_list args);

/// A failure: code, errno (0 when none), message and context lines (innermost first).
class Error {
public:
    /// Builds an error with a code, an errno value (0 for none) and a message.
    Error(ErrorCode code, int sysErrno, std::string message)
        : code_(code), errno_(sysErrno), message_(std::move(message)) {}

    ErrorCode code() const { return code_; }
    /// The errno that caused the error, or 0.
    int sysErrno() const { return errno_; }
    const std::string& message() const { return message_; }
    /// Context lines added by outer layers, innermost first.
    const std::vector<std::string>& context() const { return context_; }

    /// Adds a line of context ("while dumping GPU 0x1234"); returns *this for chaining.
    Error& addContext(std::string line) {
        context_.push_back(std::move(line));
        return *this;
    }

    /// One line: outermost context first, then the message, then strerror(errno) when set.
    /// Example: "while dumping file 7: while reading BO 2: short read (Input/output error)".
    std::string describe() const;

    /// A negative errno suitable for returning to criu (-errno, or a code-specific default).
    int toNegativeErrno() const;

private:
    ErrorCode code_;
    int errno_;
    std::string message_;
    std::vector<std::string> context_;
};

/// Builds an Error from a code and a printf-style message.
Error makeError(ErrorCode code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/// Builds an Error from a code, an errno value and a printf-style message.
Error makeErrnoError(ErrorCode code, int sysErrno, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// Either a value of T or an Error. [[nodiscard]]: a dropped Result is a compile warning.
template <typename T> class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

    /// The value, or `fallback` on error.
    T valueOr(T fallback) const& { return ok() ? value() : std::move(fallback); }

private:
    std::variant<T, Error> v_;
};

/// Result of an operation that returns nothing.
template <> class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)) {}

    bool ok() const { return !error_.has_value(); }
    explicit operator bool() const { return ok(); }
    Error& error() & { return *error_; }
    const Error& error() const& { return *error_; }
    Error&& error() && { return std::move(*error_); }

private:
    std::optional<Error> error_;
};

/// Success of a Result<void>.
inline Result<void> success() {
    return {};
}

} // namespace base

#define HAL_CONCAT_INNER(a, b) a##b
#define HAL_CONCAT(a, b) HAL_CONCAT_INNER(a, b)

/// Evaluates a Result expression; on error returns the error from the enclosing function.
#define HAL_TRY(expr)                                                                              \
    do {                                                                                           \
        auto&& hal_try_result_ = (expr);                                                           \
        if (!hal_try_result_.ok())                                                                 \
            return std::move(hal_try_result_).error();                                             \
    } while (0)

/// Like HAL_TRY, adding a printf-style context line to the error on the way up.
#define HAL_TRY_CONTEXT(expr, ...)                                                                 \
    do {                                                                                           \
        auto&& hal_try_result_ = (expr);                                                           \
        if (!hal_try_result_.ok())                                                                 \
            return std::move(hal_try_result_.error().addContext(::base::strFormat(__VA_ARGS__)));  \
    } while (0)

/// Declares `decl` from a Result expression's value, or returns its error.
/// Usage: HAL_TRY_ASSIGN(auto fd, openDevice(path));
#define HAL_TRY_ASSIGN(decl, expr)                                                                 \
    auto HAL_CONCAT(hal_tmp_, __LINE__) = (expr);                                                  \
    if (!HAL_CONCAT(hal_tmp_, __LINE__).ok())                                                      \
        return std::move(HAL_CONCAT(hal_tmp_, __LINE__)).error();                                  \
    decl = std::move(HAL_CONCAT(hal_tmp_, __LINE__)).value()

/// Like HAL_TRY_ASSIGN, adding a printf-style context line on error.
#define HAL_TRY_ASSIGN_CONTEXT(decl, expr, ...)                                                    \
    auto HAL_CONCAT(hal_tmp_, __LINE__) = (expr);                                                  \
    if (!HAL_CONCAT(hal_tmp_, __LINE__).ok())                                                      \
        return std::move(                                                                          \
            HAL_CONCAT(hal_tmp_, __LINE__).error().addContext(::base::strFormat(__VA_ARGS__)));    \
    decl = std::move(HAL_CONCAT(hal_tmp_, __LINE__)).value()
