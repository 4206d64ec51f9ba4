// Escaping and inline markup of the roff writer, checked against what man(1) makes of it.
#include "man_render.h"
#include "roff.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

TEST(Roff, EscapesWhatRoffWouldInterpret) {
    EXPECT_EQ(man::escape("a-b"), "a\\-b");
    EXPECT_EQ(man::escape("C:\\dir"), "C:\\edir");
    EXPECT_EQ(man::escape(".starts a request"), "\\&.starts a request");
    EXPECT_EQ(man::escape("'starts one too"), "\\&'starts one too");
    EXPECT_EQ(man::escape("x\n.y"), "x\n\\&.y");
    EXPECT_EQ(man::escape("mid. 'quote"), "mid. 'quote");
    EXPECT_EQ(man::escape("caf\xc3\xa9 \xe2\x86\x92"), "caf\\[u00E9] \\[u2192]");
}

TEST(Roff, LiteralSpansAreBold) {
    EXPECT_EQ(man::markup("set `numa-check` to `0`"), "set \\fBnuma\\-check\\fR to \\fB0\\fR");
    EXPECT_EQ(man::markup("`.` alone"), "\\fB\\&.\\fR alone");
    EXPECT_EQ(man::markup("no spans"), "no spans");
}

TEST(Roff, ManShowsTrickyTextAsWritten) {
    testsupport::TempDir tmp;
    std::string tricky = "A `--flag` and a path C:\\x, 'quoted', caf\xc3\xa9, and . or ' at the "
                         "start:";
    std::string page = man::titleLine("roff-test", 7, "1.0", "Tests") +
                       man::sectionHeading("NAME") + man::escape("roff-test - tricky text") + "\n" +
                       man::paragraph(tricky) +
                       man::example(".dot line\n'quote line\n  indented -x\n") +
                       man::taggedParagraph(man::bold("TAG"), "tagged `body`");
    testsupport::writeFile(tmp / "roff-test.7", page);
    mantest::Rendering r = mantest::render(tmp / "roff-test.7");
    ASSERT_TRUE(r.ok) << r.warnings;
    EXPECT_EQ(r.warnings, "");
    EXPECT_THAT(r.text, testing::HasSubstr("A --flag and a path C:\\x, 'quoted', caf\xc3\xa9, "
                                           "and . or ' at the start:"));
    EXPECT_THAT(r.text, testing::HasSubstr(".dot line 'quote line indented -x"));
    EXPECT_THAT(r.text, testing::HasSubstr("TAG tagged body"));
}

} // namespace
