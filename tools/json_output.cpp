#include "json_output.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <utility>

namespace tools {

Json::Json(std::initializer_list<Member> members) : kind_(Kind::Object) {
    for (const Member& m : members)
        (*this)[m.key] = m.value;
}

Json& Json::operator[](const std::string& key) {
    if (kind_ == Kind::Null)
        kind_ = Kind::Object;
    for (size_t i = 0; i < keys_.size(); ++i)
        if (keys_[i] == key)
            return items_[i];
    keys_.push_back(key);
    return items_.emplace_back();
}

void Json::push_back(Json item) {
    if (kind_ == Kind::Null)
        kind_ = Kind::Array;
    items_.push_back(std::move(item));
}

/// nlohmann-json writes the text: its escaping and its replacement of bad UTF-8.
struct JsonText {
    static nlohmann::ordered_json convert(const Json& v) {
        switch (v.kind_) {
        case Json::Kind::Null:
            return nullptr;
        case Json::Kind::Bool:
            return v.bool_;
        case Json::Kind::Signed:
            return v.signed_;
        case Json::Kind::Unsigned:
            return v.unsigned_;
        case Json::Kind::String:
            return v.string_;
        case Json::Kind::Array: {
            nlohmann::ordered_json out = nlohmann::ordered_json::array();
            for (const Json& item : v.items_)
                out.push_back(convert(item));
            return out;
        }
        case Json::Kind::Object: {
            nlohmann::ordered_json out = nlohmann::ordered_json::object();
            for (size_t i = 0; i < v.keys_.size(); ++i)
                out[v.keys_[i]] = convert(v.items_[i]);
            return out;
        }
        }
        return nullptr;
    }
};

std::string Json::dump() const {
    return JsonText::convert(*this).dump(-1, ' ', true,
                                         nlohmann::ordered_json::error_handler_t::replace);
}

void printJson(const Json& value) {
    printf("%s\n", value.dump().c_str());
}

} // namespace tools
