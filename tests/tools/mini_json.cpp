#include "mini_json.h"

#include <cctype>
#include <cstdlib>

namespace tooltest {
namespace {

class Parser {
public:
    explicit Parser(const std::string& text) : s_(text) {}

    bool parseDocument(Json* out) {
        skipSpace();
        if (!parseValue(out, 0))
            return false;
        skipSpace();
        if (i_ != s_.size())
            return fail("trailing characters after the value");
        return true;
    }
    const std::string& error() const { return error_; }

private:
    bool fail(const std::string& what) {
        if (error_.empty())
            error_ = what + " at offset " + std::to_string(i_);
        return false;
    }
    void skipSpace() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    bool literal(const char* word) {
        std::string w(word);
        if (s_.compare(i_, w.size(), w) != 0)
            return fail("bad literal");
        i_ += w.size();
        return true;
    }
    bool parseValue(Json* out, int depth) {
        if (depth > 64)
            return fail("nesting too deep");
        if (i_ >= s_.size())
            return fail("unexpected end");
        char c = s_[i_];
        if (c == '{')
            return parseObject(out, depth);
        if (c == '[')
            return parseArray(out, depth);
        if (c == '"') {
            out->kind = Json::Kind::String;
            return parseString(&out->string);
        }
        if (c == 't' || c == 'f') {
            out->kind = Json::Kind::Bool;
            out->boolean = c == 't';
            return literal(c == 't' ? "true" : "false");
        }
        if (c == 'n') {
            out->kind = Json::Kind::Null;
            return literal("null");
        }
        if (c == '-' || (c >= '0' && c <= '9'))
            return parseNumber(out);
        return fail(std::string("unexpected character '") + c + "'");
    }
    bool parseNumber(Json* out) {
        size_t start = i_;
        if (s_[i_] == '-')
            ++i_;
        auto digits = [&] {
            size_t from = i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9')
                ++i_;
            return i_ > from;
        };
        if (i_ < s_.size() && s_[i_] == '0')
            ++i_;
        else if (!digits())
            return fail("bad number");
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            if (!digits())
                return fail("bad fraction");
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'))
                ++i_;
            if (!digits())
                return fail("bad exponent");
        }
        out->kind = Json::Kind::Number;
        out->number = strtod(s_.substr(start, i_ - start).c_str(), nullptr);
        return true;
    }
    bool parseString(std::string* out) {
        ++i_; // opening quote
        while (i_ < s_.size()) {
            char c = s_[i_++];
            if (c == '"')
                return true;
            if (static_cast<unsigned char>(c) < 0x20)
                return fail("control character in a string");
            if (c != '\\') {
                *out += c;
                continue;
            }
            if (i_ >= s_.size())
                break;
            char e = s_[i_++];
            switch (e) {
            case '"':
                *out += '"';
                break;
            case '\\':
                *out += '\\';
                break;
            case '/':
                *out += '/';
                break;
            case 'b':
                *out += '\b';
                break;
            case 'f':
                *out += '\f';
                break;
            case 'n':
                *out += '\n';
                break;
            case 'r':
                *out += '\r';
                break;
            case 't':
                *out += '\t';
                break;
            case 'u':
                for (int k = 0; k < 4; ++k, ++i_)
                    if (i_ >= s_.size() || !isxdigit(static_cast<unsigned char>(s_[i_])))
                        return fail("bad \\u escape");
                *out += "\\u" + s_.substr(i_ - 4, 4);
                break;
            default:
                return fail("bad escape");
            }
        }
        return fail("unterminated string");
    }
    bool parseArray(Json* out, int depth) {
        out->kind = Json::Kind::Array;
        ++i_;
        skipSpace();
        if (i_ < s_.size() && s_[i_] == ']') {
            ++i_;
            return true;
        }
        for (;;) {
            skipSpace();
            Json element;
            if (!parseValue(&element, depth + 1))
                return false;
            out->array.push_back(std::move(element));
            skipSpace();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < s_.size() && s_[i_] == ']') {
                ++i_;
                return true;
            }
            return fail("expected ',' or ']'");
        }
    }
    bool parseObject(Json* out, int depth) {
        out->kind = Json::Kind::Object;
        ++i_;
        skipSpace();
        if (i_ < s_.size() && s_[i_] == '}') {
            ++i_;
            return true;
        }
        for (;;) {
            skipSpace();
            if (i_ >= s_.size() || s_[i_] != '"')
                return fail("expected a member name");
            std::string key;
            if (!parseString(&key))
                return false;
            if (out->object.count(key))
                return fail("duplicate member '" + key + "'");
            skipSpace();
            if (i_ >= s_.size() || s_[i_] != ':')
                return fail("expected ':'");
            ++i_;
            skipSpace();
            Json value;
            if (!parseValue(&value, depth + 1))
                return false;
            out->object.emplace(std::move(key), std::move(value));
            skipSpace();
            if (i_ < s_.size() && s_[i_] == ',') {
                ++i_;
                continue;
            }
            if (i_ < s_.size() && s_[i_] == '}') {
                ++i_;
                return true;
            }
            return fail("expected ',' or '}'");
        }
    }

    const std::string& s_;
    size_t i_ = 0;
    std::string error_;
};

} // namespace

const Json& Json::operator[](const std::string& key) const {
    static const Json kNull;
    auto it = object.find(key);
    return isObject() && it != object.end() ? it->second : kNull;
}

std::optional<Json> parseJson(const std::string& text, std::string* error) {
    Parser parser(text);
    Json value;
    if (!parser.parseDocument(&value)) {
        if (error)
            *error = parser.error();
        return std::nullopt;
    }
    return value;
}

} // namespace tooltest
