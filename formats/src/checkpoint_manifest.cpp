#include "formats/checkpoint_manifest.h"

#include "little_endian.h"

#include "formats/content_cipher.h"
#include "formats/image_open.h"

#include <openssl/evp.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr char kMagic[8] = {'A', 'M', 'D', 'G', 'P', 'U', 'M', 'F'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixed = sizeof kMagic + 4 + 4 + 3 * 4;
constexpr uint32_t kMaxCertificate = 64 << 10;
constexpr uint32_t kMaxSignature = 1024;
constexpr std::string_view kBodyHeader = "criu-amdgpu checkpoint manifest 1\n";
constexpr size_t kHashBlock = 1 << 20;

struct FdCloser {
    int fd;
    ~FdCloser() {
        if (fd >= 0)
            close(fd);
    }
};

Error bad(const std::string& file, const std::string& what) {
    return makeError(ErrorCode::Image, "%s: %s", file.c_str(), what.c_str());
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool parseHex(std::string_view text, Sha256* out) {
    if (text.size() != 2 * out->size())
        return false;
    for (size_t i = 0; i < out->size(); ++i) {
        int hi = hexDigit(text[2 * i]), lo = hexDigit(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        (*out)[i] = static_cast<std::byte>(hi << 4 | lo);
    }
    return true;
}

bool unescape(std::string_view text, std::string* out) {
    out->clear();
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out->push_back(text[i]);
            continue;
        }
        if (i + 2 >= text.size())
            return false;
        int hi = hexDigit(text[i + 1]), lo = hexDigit(text[i + 2]);
        if (hi < 0 || lo < 0)
            return false;
        out->push_back(static_cast<char>(hi << 4 | lo));
        i += 2;
    }
    // Only the canonical escape decodes: one text per name.
    return escapeName(*out) == text;
}

Sha256 sha256Of(std::string_view bytes) {
    Sha256 out{};
    unsigned n = 0;
    EVP_Digest(bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(out.data()), &n,
               EVP_sha256(), nullptr);
    return out;
}

/// The SHA-256 and size of the regular file `name` of `dirFd`, opened as hostile input.
Result<void> hashFile(int dirFd, const std::string& dirName, ManifestEntry& entry) {
    auto opened = openImageFile(dirFd, entry.name);
    if (!opened.ok()) // replaced since it was listed; the error would name it unescaped
        return makeError(ErrorCode::Image, "%s/%s: not a regular file any more", dirName.c_str(),
                         escapeName(entry.name).c_str());
    FdCloser fd{*opened};
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
        return makeError(ErrorCode::Internal, "OpenSSL has no SHA-256");
    std::vector<char> block(kHashBlock);
    uint64_t size = 0;
    for (;;) {
        ssize_t n = read(fd.fd, block.data(), block.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s/%s: cannot read it", dirName.c_str(),
                                  escapeName(entry.name).c_str());
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx.get(), block.data(), static_cast<size_t>(n));
        size += static_cast<uint64_t>(n);
    }
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(entry.sha256.data()), &len);
    entry.size = size;
    return success();
}

} // namespace

const char* schemeName(SignatureScheme scheme) {
    return scheme == SignatureScheme::EcdsaSha256 ? "ECDSA with SHA-256" : "RSA-PSS with SHA-256";
}

bool outsideManifest(std::string_view name) {
    return name == kManifestImageName || name == "stats-dump" || name == "stats-restore" ||
           (name.size() > 4 && name.ends_with(".log"));
}

std::string escapeName(std::string_view name) {
    std::string out;
    for (char c : name) {
        auto u = static_cast<unsigned char>(c);
        if (u > 0x20 && u < 0x7f && c != '%') {
            out.push_back(c);
            continue;
        }
        out += strFormat("%%%02x", u);
    }
    return out;
}

Result<Manifest> scanCheckpointDirectory(int dirFd, const std::string& dirName) {
    int listFd = openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listFd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "%s: cannot list it", dirName.c_str());
    std::unique_ptr<DIR, int (*)(DIR*)> dir(fdopendir(listFd), closedir);
    if (!dir) {
        int err = errno;
        close(listFd);
        return makeErrnoError(ErrorCode::Io, err, "%s: cannot list it", dirName.c_str());
    }
    Manifest manifest;
    while (struct dirent* d = readdir(dir.get())) {
        std::string name = d->d_name;
        if (name == "." || name == ".." || outsideManifest(name))
            continue;
        struct stat st {};
        if (fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s/%s", dirName.c_str(),
                                  escapeName(name).c_str());
        ManifestEntry entry;
        entry.name = name;
        if (S_ISLNK(st.st_mode)) {
            std::vector<char> target(4096);
            ssize_t n = readlinkat(dirFd, name.c_str(), target.data(), target.size());
            if (n < 0 || static_cast<size_t>(n) >= target.size())
                return makeErrnoError(ErrorCode::Io, n < 0 ? errno : ENAMETOOLONG,
                                      "%s/%s: cannot read the link", dirName.c_str(),
                                      escapeName(name).c_str());
            entry.kind = ManifestEntry::Kind::Link;
            entry.target.assign(target.data(), static_cast<size_t>(n));
            entry.size = entry.target.size();
            entry.sha256 = sha256Of(entry.target);
        } else if (S_ISREG(st.st_mode)) {
            HAL_TRY(hashFile(dirFd, dirName, entry));
        } else {
            return makeError(ErrorCode::Image,
                             "%s/%s: neither a regular file nor a link (mode %07o); a signed "
                             "checkpoint holds only those",
                             dirName.c_str(), escapeName(name).c_str(),
                             static_cast<unsigned>(st.st_mode));
        }
        manifest.entries.push_back(std::move(entry));
    }
    std::sort(manifest.entries.begin(), manifest.entries.end(),
              [](const ManifestEntry& a, const ManifestEntry& b) { return a.name < b.name; });
    return manifest;
}

std::string encodeManifestBody(const Manifest& manifest) {
    std::string out(kBodyHeader);
    for (const ManifestEntry& e : manifest.entries) {
        bool link = e.kind == ManifestEntry::Kind::Link;
        out += strFormat("%s %llu %s ", link ? "link" : "file",
                         static_cast<unsigned long long>(e.size), hexOf(e.sha256).c_str());
        if (link)
            out += escapeName(e.target) + " ";
        out += escapeName(e.name) + "\n";
    }
    return out;
}

Result<Manifest> decodeManifestBody(std::string_view body, const std::string& file) {
    if (!body.starts_with(kBodyHeader))
        return bad(file, "the manifest does not begin with \"criu-amdgpu checkpoint manifest 1\"");
    body.remove_prefix(kBodyHeader.size());
    Manifest manifest;
    size_t line = 1;
    while (!body.empty()) {
        ++line;
        size_t end = body.find('\n');
        if (end == std::string_view::npos)
            return bad(file, strFormat("line %zu of the manifest does not end", line));
        std::string_view text = body.substr(0, end);
        body.remove_prefix(end + 1);
        std::vector<std::string_view> fields;
        for (size_t at = 0; at <= text.size();) {
            size_t space = text.find(' ', at);
            if (space == std::string_view::npos)
                space = text.size();
            fields.push_back(text.substr(at, space - at));
            at = space + 1;
        }
        auto wrong = [&](const char* what) {
            return bad(file, strFormat("line %zu of the manifest: %s", line, what));
        };
        ManifestEntry e;
        bool link = !fields.empty() && fields[0] == "link";
        if (fields.size() != (link ? 5u : 4u) || (!link && fields[0] != "file"))
            return wrong("not \"file SIZE SHA256 NAME\" nor \"link SIZE SHA256 TARGET NAME\"");
        e.kind = link ? ManifestEntry::Kind::Link : ManifestEntry::Kind::File;
        std::string size(fields[1]);
        char* stop = nullptr;
        errno = 0;
        unsigned long long n = strtoull(size.c_str(), &stop, 10);
        if (size.empty() || *stop || errno || size[0] == '-' || (size.size() > 1 && size[0] == '0'))
            return wrong("the size is not a number");
        e.size = n;
        if (!parseHex(fields[2], &e.sha256))
            return wrong("the SHA-256 is not 64 hex digits");
        if (link && (!unescape(fields[3], &e.target) || e.target.size() != e.size ||
                     sha256Of(e.target) != e.sha256))
            return wrong("the link's target is not the one its size and SHA-256 describe");
        if (!unescape(fields.back(), &e.name) || e.name.empty() || e.name == "." ||
            e.name == ".." || e.name.find('/') != std::string::npos ||
            e.name.find('\0') != std::string::npos || outsideManifest(e.name))
            return wrong("the name is not a name a checkpoint directory can hold");
        if (!manifest.entries.empty() && manifest.entries.back().name >= e.name)
            return wrong("the names are not sorted, or one is there twice");
        manifest.entries.push_back(std::move(e));
    }
    return manifest;
}

std::string signedPart(const SignedManifest& m) {
    std::string out(kMagic, sizeof kMagic);
    le::append<uint32_t>(out, kVersion);
    le::append<uint8_t>(out, static_cast<uint8_t>(m.scheme));
    le::append<uint8_t>(out, 0);
    le::append<uint16_t>(out, 0);
    le::append<uint32_t>(out, static_cast<uint32_t>(m.body.size()));
    le::append<uint32_t>(out, static_cast<uint32_t>(m.certificate.size()));
    le::append<uint32_t>(out, 0); // the signature's length, not known when it is made
    out += m.body;
    out.append(reinterpret_cast<const char*>(m.certificate.data()), m.certificate.size());
    return out;
}

std::string encodeSignedManifest(const SignedManifest& m) {
    std::string out = signedPart(m);
    std::string length;
    le::append<uint32_t>(length, static_cast<uint32_t>(m.signature.size()));
    out.replace(kFixed - 4, 4, length);
    out.append(reinterpret_cast<const char*>(m.signature.data()), m.signature.size());
    return out;
}

Result<SignedManifest> decodeSignedManifest(std::string_view bytes, const std::string& file) {
    if (bytes.size() < sizeof kMagic || memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return bad(file, "not a signed manifest (its first 8 bytes are not \"AMDGPUMF\")");
    if (bytes.size() < kFixed)
        return bad(file, strFormat("%zu bytes, shorter than the %zu of its fixed fields",
                                   bytes.size(), kFixed));
    const auto* at = reinterpret_cast<const std::byte*>(bytes.data());
    uint32_t version = le::get<uint32_t>(at + 8);
    auto scheme = le::get<uint8_t>(at + 12);
    uint32_t reserved = le::get<uint8_t>(at + 13) | le::get<uint16_t>(at + 14);
    uint32_t body = le::get<uint32_t>(at + 16), cert = le::get<uint32_t>(at + 20),
             sig = le::get<uint32_t>(at + 24);
    if (version != kVersion)
        return bad(file, strFormat("version %u, this plugin reads version %u", version, kVersion));
    if (scheme != 1 && scheme != 2)
        return bad(file, strFormat("signature scheme %u is none of 1 (RSA-PSS) and 2 (ECDSA)",
                                   static_cast<unsigned>(scheme)));
    if (reserved)
        return bad(file, "its reserved bytes are not zero");
    if (cert == 0 || cert > kMaxCertificate || sig == 0 || sig > kMaxSignature)
        return bad(file, strFormat("a certificate of %u bytes (1 to %u) and a signature of %u "
                                   "(1 to %u)",
                                   cert, kMaxCertificate, sig, kMaxSignature));
    uint64_t total = uint64_t{kFixed} + body + cert + sig;
    if (total != bytes.size())
        return bad(file, strFormat("its fields add up to %llu bytes, the file has %zu",
                                   static_cast<unsigned long long>(total), bytes.size()));
    SignedManifest m;
    m.scheme = static_cast<SignatureScheme>(scheme);
    m.body.assign(bytes.substr(kFixed, body));
    const std::byte* c = at + kFixed + body;
    m.certificate.assign(c, c + cert);
    m.signature.assign(c + cert, c + cert + sig);
    return m;
}

std::vector<std::string> manifestDifferences(const Manifest& signedManifest, const Manifest& now) {
    std::vector<std::string> out;
    const auto& a = signedManifest.entries;
    const auto& b = now.entries;
    size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        if (j == b.size() || (i < a.size() && a[i].name < b[j].name)) {
            out.push_back(escapeName(a[i].name) + ": removed after the checkpoint was signed");
            ++i;
        } else if (i == a.size() || b[j].name < a[i].name) {
            out.push_back(escapeName(b[j].name) + ": added after the checkpoint was signed");
            ++j;
        } else {
            const ManifestEntry &was = a[i++], &is = b[j++];
            std::string name = escapeName(was.name);
            if (was.kind != is.kind)
                out.push_back(name +
                              strFormat(": signed as a %s, now a %s",
                                        was.kind == ManifestEntry::Kind::Link ? "link" : "file",
                                        is.kind == ManifestEntry::Kind::Link ? "link" : "file"));
            else if (was.kind == ManifestEntry::Kind::Link && was.target != is.target)
                out.push_back(name + ": the link leads to " + escapeName(is.target) +
                              ", it was signed leading to " + escapeName(was.target));
            else if (was.size != is.size)
                out.push_back(name + strFormat(": changed since the checkpoint was signed (%llu "
                                               "bytes, signed with %llu)",
                                               static_cast<unsigned long long>(is.size),
                                               static_cast<unsigned long long>(was.size)));
            else if (was.sha256 != is.sha256)
                out.push_back(name + ": changed since the checkpoint was signed (its SHA-256 "
                                     "differs)");
        }
    }
    return out;
}

} // namespace formats
