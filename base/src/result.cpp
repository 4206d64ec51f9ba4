#include "base/result.h"

#include <cstdio>
#include <cstring>

namespace base {

const char* errorCodeName(ErrorCode code) {
    switch (code) {
#define HAL_ERROR_NAME(name, text)                                                                 \
    case ErrorCode::name:                                                                          \
        return #name;
        HAL_ERROR_CODES(HAL_ERROR_NAME)
#undef HAL_ERROR_NAME
    }
    return "Unknown";
}

const char* errorCodeText(ErrorCode code) {
    switch (code) {
#define HAL_ERROR_TEXT(name, text)                                                                 \
    case ErrorCode::name:                                                                          \
        return text;
        HAL_ERROR_CODES(HAL_ERROR_TEXT)
#undef HAL_ERROR_TEXT
    }
    return "unknown error";
}

std::string strFormatV(const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n <= 0)
        return {};
    std::string out(static_cast<size_t>(n), '\0');
    vsnprintf(out.data(), out.size() + 1, fmt, args);
    return out;
}

std::string strFormat(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string out = strFormatV(fmt, args);
    va_end(args);
    return out;
}

std::string Error::describe() const {
    std::string out;
    for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
        out += *it;
        out += ": ";
    }
    out += message_;
    if (errno_ != 0) {
        out += " (";
        out += strerror(errno_);
        out += ")";
    }
    return out;
}

int Error::toNegativeErrno() const {
    if (errno_ > 0)
        return -errno_;
    switch (code_) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::Image:
    case ErrorCode::Config:
        return -EINVAL;
    case ErrorCode::NotPresent:
    case ErrorCode::NoMapping:
        return -ENODEV;
    case ErrorCode::NotSupported:
        return -ENOTSUP;
    case ErrorCode::NotFound:
        return -ENOENT;
    case ErrorCode::OutOfMemory:
        return -ENOMEM;
    case ErrorCode::Io:
        return -EIO;
    default:
        return -EIO;
    }
}

Error makeError(ErrorCode code, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string message = strFormatV(fmt, args);
    va_end(args);
    return Error(code, 0, std::move(message));
}

Error makeErrnoError(ErrorCode code, int sysErrno, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string message = strFormatV(fmt, args);
    va_end(args);
    return Error(code, sysErrno, std::move(message));
}

} // namespace base
