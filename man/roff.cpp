#include "roff.h"

#include <cstdint>
#include <cstdio>

namespace man {
namespace {

// Decodes the UTF-8 sequence at text[i] (advancing i past it); malformed bytes stand for
// themselves as Latin-1, so nothing is dropped.
uint32_t nextCodePoint(std::string_view text, size_t& i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char lead = byte(i);
    size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (length == 1 || i + length > text.size()) {
        ++i;
        return lead;
    }
    uint32_t cp = lead & (0x7f >> length);
    for (size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xc0) != 0x80) {
            ++i;
            return lead;
        }
        cp = (cp << 6) | (byte(i + k) & 0x3f);
    }
    i += length;
    return cp;
}

} // namespace

std::string escape(std::string_view text) {
    std::string out;
    bool lineStart = true;
    for (size_t i = 0; i < text.size();) {
        char c = text[i];
        if (lineStart && (c == '.' || c == '\''))
            out += "\\&";
        lineStart = c == '\n';
        if (static_cast<unsigned char>(c) >= 0x80) {
            char buf[16];
            snprintf(buf, sizeof buf, "\\[u%04X]", nextCodePoint(text, i));
            out += buf;
            continue;
        }
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else
            out += c;
        ++i;
    }
    return out;
}

std::string markup(std::string_view text) {
    std::string out;
    bool literal = false;
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] != '`')
            continue;
        std::string piece = escape(text.substr(start, i - start));
        out += literal && !piece.empty() ? "\\fB" + piece + "\\fR" : piece;
        literal = !literal;
        start = i + 1;
    }
    return out;
}

std::string titleLine(std::string_view name, int section, std::string_view version,
                      std::string_view manual) {
    std::string upper;
    for (char c : name)
        upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    return ".TH \"" + escape(upper) + "\" " + std::to_string(section) + " \"\" \"criu-amdgpu " +
           escape(version) + "\" \"" + escape(manual) + "\"\n" +
           ".nh\n.ad l\n"; // no hyphenation (names and options stay whole), ragged right
}

std::string sectionHeading(std::string_view title) {
    return ".SH \"" + escape(title) + "\"\n";
}

std::string subsectionHeading(std::string_view title) {
    return ".SS \"" + escape(title) + "\"\n";
}

std::string paragraph(std::string_view text) {
    return ".PP\n" + markup(text) + "\n";
}

std::string taggedParagraph(std::string_view tagRoff, std::string_view text) {
    return ".TP\n" + std::string(tagRoff) + "\n" + markup(text) + "\n";
}

std::string listItem(std::string_view label, std::string_view text) {
    return ".IP \"" + std::string(label) + "\" 4\n" + markup(text) + "\n";
}

std::string example(std::string_view text) {
    std::string body(text);
    if (!body.empty() && body.back() == '\n')
        body.pop_back();
    return ".PP\n.RS 4\n.nf\n" + escape(body) + "\n.fi\n.RE\n";
}

std::string bold(std::string_view text) {
    return "\\fB" + escape(text) + "\\fR";
}

std::string italic(std::string_view text) {
    return "\\fI" + escape(text) + "\\fR";
}

} // namespace man
