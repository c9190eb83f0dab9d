// Messages on the terminal: what others said (a sandbox's stderr in a hint, a file's name) shows
// its control characters, never sends them.
#include "output.hpp"

#include "error.hpp"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace ss
