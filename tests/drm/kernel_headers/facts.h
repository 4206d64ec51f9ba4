#pragma once
/// \file
/// The facts of uapi_facts.inc as a table: name -> value, one table from the project's headers,
/// one from the kernel's (each built in a translation unit of its own: the two sets of headers
/// declare the same names).

#include <cstdint>
#include <map>
#include <string>

namespace uapifacts {

/// Ends the name of a size or an ioctl number the project's form may be shorter than the
/// kernel's (a struct the kernel grew at its end).
#define kPrefixMark "<="

/// "type.sizeof", "type.member" (an offset) or a macro's name -> its value.
using Facts = std::map<std::string, uint64_t>;

/// The facts as the project's declarations and the build machine's headers give them.
Facts projectFacts();
/// The facts as the kernel's headers (CRIU_AMDGPU_KERNEL_HEADERS) give them.
Facts kernelFacts();
/// KFD_IOCTL_MAJOR_VERSION and KFD_IOCTL_MINOR_VERSION of the kernel's headers.
std::pair<uint32_t, uint32_t> kernelKfdVersion();
/// The version of the kernel's headers' package (e.g. "7.2.13-1 (sid)").
std::string kernelHeadersVersion();

} // namespace uapifacts
