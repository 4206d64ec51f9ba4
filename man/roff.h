#pragma once
/// \file
/// Writing man pages in roff (the man macros of groff_man(7)): escaping, inline markup, and the
/// few macros the generated pages use. Text given to these functions is plain UTF-8 in which
/// backquotes mark literal spans (`like this`), as in the option table's help texts.

#include <string>
#include <string_view>

namespace man {

/// Plain text made safe for roff: backslashes, hyphens (as minus signs, so that options and
/// paths copy and paste), non-ASCII characters (as \[uXXXX]), and a `.` or `'` that would start
/// a line (it would be read as a request) are escaped. Newlines are kept.
std::string escape(std::string_view text);

/// escape(), with every `literal` span set in bold, as man pages show what is typed literally.
std::string markup(std::string_view text);

/// The title line: .TH NAME SECTION "" "criu-amdgpu VERSION" MANUAL, then no hyphenation and
/// left adjustment for the whole page.
std::string titleLine(std::string_view name, int section, std::string_view version,
                      std::string_view manual);

/// A section heading (.SH): `title` is written as given (upper case by convention).
std::string sectionHeading(std::string_view title);

/// A subsection heading (.SS).
std::string subsectionHeading(std::string_view title);

/// A paragraph (.PP) of markup(text).
std::string paragraph(std::string_view text);

/// A tagged paragraph (.TP): the tag line is roff already (build it with bold()/markup()), the
/// body is markup(text).
std::string taggedParagraph(std::string_view tagRoff, std::string_view text);

/// An indented paragraph (.IP) with a label such as "1." or "\(bu"; the body is markup(text).
std::string listItem(std::string_view label, std::string_view text);

/// Lines shown as they are (no filling), indented: commands, file contents, help texts.
std::string example(std::string_view text);

/// escape(text) in bold, for a tag or a name.
std::string bold(std::string_view text);

/// escape(text) in italics, for a placeholder.
std::string italic(std::string_view text);

} // namespace man
