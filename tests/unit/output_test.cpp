// Messages on the terminal: what others said (a sandbox's stderr in a hint, a file's name) shows
// its control characters, never sends them.
#include "output.hpp"

#include "error.hpp"
#include "gtest/gtest.h"
#include "strings.hpp"

namespace ss {
namespace {

TEST(FormatError, ControlCharactersInAnyPartAreShownNotSent) {
  Error e(kExitRemote, "cannot read \x1b[2J\x1b[1;1Hthe archive",
          {"tar said:\n\x1b]52;c;Y3VybCBldmlsLnRlc3QgfCBzaAo=\x07"}, {"see \x1b[31mred\x1b[0m"});
  std::string out = FormatError(e);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_NE(out.find("cannot read ^[[2J^[[1;1Hthe archive\n"), std::string::npos) << out;
  EXPECT_NE(out.find("tar said:\n^[]52;c;Y3VybCBldmlsLnRlc3QgfCBzaAo=^G\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("hint: see ^[[31mred^[[0m\n"), std::string::npos) << out;
}

TEST(Printable, C1ControlsReorderingCharactersAndStrayBytesAreShownNotSent) {
  // Text passes whole, in any script; tabs stay; a line break only when lines are kept.
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80\tok"),
            "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80\tok");
  EXPECT_EQ(Printable("a\nb"), "a^Jb");
  EXPECT_EQ(Printable("a\nb", true), "a\nb");
  // CSI and OSC as C1 controls, bidi overrides and zero-width characters.
  EXPECT_EQ(Printable("x\xc2\x9b"
                      "31m\xc2\x9d"
                      "0;t\xc2\x9c"),
            "x<U+009B>31m<U+009D>0;t<U+009C>");
  EXPECT_EQ(Printable("\xe2\x80\xaegnp.exe"), "<U+202E>gnp.exe");
  EXPECT_EQ(Printable("a\xe2\x81\xa6"
                      "b\xe2\x80\x8b"
                      "c\xef\xbb\xbf"),
            "a<U+2066>b<U+200B>c<U+FEFF>");
  // Bytes that are not UTF-8: stray, cut short, overlong, surrogates.
  EXPECT_EQ(Printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(Printable("ab\xe2\x80"), "ab\\xe2\\x80");
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(Printable("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

}  // namespace
}  // namespace ss
