#include "test_keys.h"

#include "temp_dir.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <sys/stat.h>

#include <ctime>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace testsupport {
namespace {

void check(int rc, const char* what) {
    if (rc < 0)
        throw std::runtime_error(std::string(what) + ": " + gnutls_strerror(rc));
}

template <typename Export> std::string exported(Export&& fn) {
    gnutls_datum_t out{};
    check(fn(&out), "export");
    std::string text(reinterpret_cast<char*>(out.data), out.size);
    gnutls_free(out.data);
    return text;
}

/// A fresh RSA key of `bits` and a certificate it signs itself: PEM texts.
std::pair<std::string, std::string> generate(int which, unsigned bits) {
    gnutls_x509_privkey_t key = nullptr;
    gnutls_x509_crt_t crt = nullptr;
    check(gnutls_x509_privkey_init(&key), "privkey init");
    check(gnutls_x509_privkey_generate(key, GNUTLS_PK_RSA, bits, 0), "RSA key");
    check(gnutls_x509_crt_init(&crt), "crt init");
    check(gnutls_x509_crt_set_key(crt, key), "crt key");
    check(gnutls_x509_crt_set_version(crt, 3), "crt version");
    unsigned char serial[4] = {1, 2, 3, static_cast<unsigned char>(which)};
    check(gnutls_x509_crt_set_serial(crt, serial, sizeof serial), "crt serial");
    std::string cn = "criu-amdgpu test " + std::to_string(which);
    check(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn.data(),
                                        static_cast<unsigned>(cn.size())),
          "crt name");
    time_t now = time(nullptr);
    check(gnutls_x509_crt_set_activation_time(crt, now - 3600), "crt activation");
    check(gnutls_x509_crt_set_expiration_time(crt, now + 86400), "crt expiration");
    check(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), "crt sign");
    auto cert = exported([&](gnutls_datum_t* out) {
        return gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, out);
    });
    auto priv = exported([&](gnutls_datum_t* out) {
        return gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, out);
    });
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return {cert, priv};
}

} // namespace

KeyFiles writeTestKeys(const std::string& dir, int which, const std::string& stem, unsigned bits) {
    static std::mutex mu;
    static std::map<std::pair<int, unsigned>, std::pair<std::string, std::string>> made;
    std::pair<std::string, std::string> pair;
    {
        std::lock_guard lock(mu);
        auto it = made.find({which, bits});
        if (it == made.end())
            it = made.emplace(std::make_pair(which, bits), generate(which, bits)).first;
        pair = it->second;
    }
    KeyFiles files{dir + "/" + stem + ".crt", dir + "/" + stem + ".key"};
    writeFile(files.certificate, pair.first);
    writeFile(files.privateKey, pair.second);
    chmod(files.certificate.c_str(), 0600);
    chmod(files.privateKey.c_str(), 0600);
    return files;
}

} // namespace testsupport
