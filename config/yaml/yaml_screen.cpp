#include "yaml_screen.h"

#include <sstream>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

namespace config {
namespace {

// Thrown by the handler to stop the parser; caught in screenYaml.
struct StopParsing {
    int line;
    std::string message;
};

class ScreeningHandler : public YAML::EventHandler {
public:
    explicit ScreeningHandler(const std::string& text) : text_(text) {}

    void OnDocumentStart(const YAML::Mark& mark) override {
        count(mark);
        if (started_ && mark.pos == lastDocumentPos_)
            throw StopParsing{mark.line, unexpectedToken(mark)};
        started_ = true;
        lastDocumentPos_ = mark.pos;
        if (documents_ == 1)
            secondDocumentLine_ = mark.line;
    }
    void OnDocumentEnd() override { ++documents_; }
    void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { count(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  const std::string&) override {
        count(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        open(mark);
    }
    void OnSequenceEnd() override { --depth_; }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
        open(mark);
    }
    void OnMapEnd() override { --depth_; }

    size_t documents() const { return documents_; }
    int secondDocumentLine() const { return secondDocumentLine_; }

private:
    void count(const YAML::Mark& mark) {
        if (++events_ > kMaxYamlEvents)
            throw StopParsing{mark.line, "more than " + std::to_string(kMaxYamlEvents) +
                                             " YAML nodes; a configuration file is far smaller"};
    }
    void open(const YAML::Mark& mark) {
        count(mark);
        if (++depth_ > kMaxYamlDepth)
            throw StopParsing{mark.line, "collections nested more than " +
                                             std::to_string(kMaxYamlDepth) + " deep"};
    }
    std::string unexpectedToken(const YAML::Mark& mark) const {
        std::string what = mark.pos >= 0 && static_cast<size_t>(mark.pos) < text_.size()
                               ? std::string("'") + text_[mark.pos] + "'"
                               : std::string("this token");
        return "YAML syntax error: unexpected " + what + " at column " +
               std::to_string(mark.column + 1) +
               " where a value or a new document should start (a ',' belongs inside [ ] or "
               "{ }; quote a value that contains one)";
    }

    const std::string& text_;
    size_t events_ = 0;
    unsigned depth_ = 0;
    size_t documents_ = 0;
    bool started_ = false;
    int lastDocumentPos_ = -1;
    int secondDocumentLine_ = 0;
};

base::Error screenError(const std::string& fileName, int line, const std::string& message) {
    std::string where = line >= 0 ? fileName + ":" + std::to_string(line + 1) : fileName;
    return base::makeError(base::ErrorCode::Config, "%s: %s", where.c_str(), message.c_str());
}

} // namespace

base::Result<YamlScreen> screenYaml(const std::string& text, const std::string& fileName) {
    if (text.size() > kMaxConfigFileBytes)
        return screenError(fileName, -1,
                           "the file holds " + std::to_string(text.size()) +
                               " bytes, more than a configuration file may (" +
                               std::to_string(kMaxConfigFileBytes) + ")");
    std::istringstream stream(text);
    ScreeningHandler handler(text);
    try {
        YAML::Parser parser(stream);
        while (parser.HandleNextDocument(handler)) {
        }
    } catch (const StopParsing& stop) {
        return screenError(fileName, stop.line, stop.message);
    } catch (const YAML::Exception& e) {
        return screenError(fileName, e.mark.is_null() ? -1 : e.mark.line,
                           "YAML syntax error: " + e.msg);
    } catch (const std::exception& e) {
        return screenError(fileName, -1, std::string("cannot parse YAML: ") + e.what());
    }
    return YamlScreen{handler.documents(), handler.secondDocumentLine()};
}

} // namespace config
