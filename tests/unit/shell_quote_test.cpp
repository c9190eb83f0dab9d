#include "shell_quote.hpp"

#include <gtest/gtest.h>

#include <random>

#include "error.hpp"
#include "process.hpp"

namespace ss {
namespace {

// Has `shell` parse ShellJoin(words) (so the shell itself reads ShellQuote's output) and print
// each word it got NUL-terminated: /bin/sh, bash and zsh with a for loop, fish with its own
// `string join0`.
std::vector<std::string> ThroughShell(const std::vector<std::string>& words,
                                      const std::string& shell = "/bin/sh") {
  std::string script = shell.find("fish") != std::string::npos
                           ? "string join0 -- " + ShellJoin(words)
                           : "for a in " + ShellJoin(words) + "; do printf '%s\\0' \"$a\"; done";
  ProcessResult r = ss::Run({shell, "-c", script});
  EXPECT_EQ(r.status, 0) << shell << ": " << r.err;
  std::vector<std::string> out;
  std::string cur;
  for (char c : r.out) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

// The shells a sandbox user may have: Debian's sh (dash), bash, zsh, fish.
const std::vector<std::string>& Shells() {
  static const std::vector<std::string> shells = {"/bin/sh", "/bin/bash", "/usr/bin/zsh",
                                                  "/usr/bin/fish"};
  return shells;
}

TEST(ShellQuote, SafeWordsStayAsTheyAre) {
  EXPECT_EQ(ShellQuote("abc"), "abc");
  EXPECT_EQ(ShellQuote("/usr/bin/x-y_z.1"), "/usr/bin/x-y_z.1");
  EXPECT_EQ(ShellQuote("a=b,c:d@e%f+g"), "a=b,c:d@e%f+g");
}

TEST(ShellQuote, EmptyQuotesAndBackslashes) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  // Outside the quotes, where fish and POSIX shells agree.
  EXPECT_EQ(ShellQuote("a\\\\b"), "'a'\\\\\\\\'b'");
  EXPECT_EQ(ShellQuote("\\'"), "\\\\\\'");
}

TEST(ShellQuote, NulIsRejected) { EXPECT_THROW(ShellQuote(std::string("a\0b", 3)), Error); }

TEST(ShellQuote, HostileStringsRoundTrip) {
  std::vector<std::string> hostile = {
      "",        " ",     "'",     "''",      "\"",       "\\",       "\\'",         "$HOME",
      "${HOME}", "$(id)", "`id`",  "a;b",     "a|b",      "a&&b",     "*",           "?",
      "[a]",     "~",     "~root", "-n",      "-e",       "--",       "a\nb",        "\t",
      "\r\n",    "#x",    "!!",    "{a,b}",   "\x01\x7f", "\xff\xfe", "caf\xc3\xa9", "\xe2\x80\x8b",
      "'\"'\"'", "$'x'",  "a'b'c", "   lead", "trail   ", "%s%n",     "\\n",         ">out",
      "<in",     "2>&1",  "(sub)"};
  for (const auto& shell : Shells()) EXPECT_EQ(ThroughShell(hostile, shell), hostile) << shell;
}

TEST(ShellQuote, TenThousandRandomByteStrings) {
  std::mt19937 rng(20261125);
  std::uniform_int_distribution<int> len(0, 24);
  std::uniform_int_distribution<int> byte(1, 255);  // NUL cannot be in an argv
  std::vector<std::string> words;
  for (int i = 0; i < 10000; ++i) {
    std::string w;
    for (int n = len(rng); n > 0; --n) w += static_cast<char>(byte(rng));
    words.push_back(w);
  }
  // Batches keep each script well under the kernel's argument size limit.
  for (size_t start = 0; start < words.size(); start += 1000) {
    std::vector<std::string> batch(words.begin() + static_cast<long>(start),
                                   words.begin() + static_cast<long>(start + 1000));
    for (const auto& shell : Shells()) {
      ASSERT_EQ(ThroughShell(batch, shell), batch) << shell << ": batch starting at " << start;
    }
  }
}

TEST(ShellQuote, ArgvThroughPrintf) {
  // The issue's exact check: sh -c 'printf %s "$@"' sh WORD prints WORD.
  for (const std::string w : {"a b", "it's", "$(x)", "\n", ""}) {
    ProcessResult r =
        ss::Run({"/bin/sh", "-c", "eval \"set -- $1\"; printf %s \"$@\"", "sh", ShellQuote(w)});
    EXPECT_EQ(r.out, w);
  }
}

}  // namespace
}  // namespace ss
