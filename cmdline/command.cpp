#include "cmdline/command.h"

#include <CLI/CLI.hpp>

#include <utility>

namespace cmdline {

Option& Option::typeName(const std::string& name) {
    option_->type_name(name);
    return *this;
}

Option& Option::required() {
    option_->required();
    return *this;
}

Option& Option::defaultText(const std::string& text) {
    option_->default_str(text);
    return *this;
}

Option& Option::needs(const Option& other) {
    option_->needs(other.option_);
    return *this;
}

Option& Option::excludes(const Option& other) {
    option_->excludes(other.option_);
    return *this;
}

Option& Option::oneOf(const std::vector<std::string>& values) {
    option_->check(CLI::IsMember(values));
    return *this;
}

Option& Option::range(int min, int max) {
    option_->check(CLI::Range(min, max));
    return *this;
}

Option& Option::check(std::function<std::string(const std::string&)> check) {
    option_->check(
        CLI::Validator([check = std::move(check)](std::string& text) { return check(text); }, ""));
    return *this;
}

Option& Option::transform(std::function<std::string(std::string&)> transform) {
    option_->transform(CLI::Validator(std::move(transform), ""));
    return *this;
}

Option& Option::takeAll() {
    option_->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)->allow_extra_args(false);
    return *this;
}

Option Command::addOption(const std::string& name, std::string& value, const std::string& help) {
    return Option(app_->add_option(name, value, help));
}

Option Command::addOption(const std::string& name, int& value, const std::string& help) {
    return Option(app_->add_option(name, value, help));
}

Option Command::addOption(const std::string& name, std::vector<std::string>& value,
                          const std::string& help) {
    return Option(app_->add_option(name, value, help));
}

Option Command::addOption(const std::string& name, std::function<void(const std::string&)> store,
                          const std::string& help) {
    return Option(app_->add_option_function<std::string>(name, std::move(store), help));
}

Option Command::addFlag(const std::string& name, bool& value, const std::string& help) {
    return Option(app_->add_flag(name, value, help));
}

void Command::setDetails(const std::string& details) {
    app_->footer(details);
}

void Command::badValue(const std::string& name, const std::string& message) {
    throw CLI::ValidationError(name, message);
}

} // namespace cmdline
