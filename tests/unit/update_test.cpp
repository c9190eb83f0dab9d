#include "update.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

int Cmp(const char* a, const char* b) {
  auto x = ParseSemVer(a);
  auto y = ParseSemVer(b);
  EXPECT_TRUE(x && y) << a << " " << b;
  return CompareSemVer(*x, *y);
}

TEST(Update, SemanticVersionsCompareByPrecedence) {
  EXPECT_LT(Cmp("1.2.0", "1.3.0"), 0);
  EXPECT_GT(Cmp("1.10.0", "1.9.9"), 0);
  EXPECT_GT(Cmp("2.0.0", "1.99.99"), 0);
  EXPECT_EQ(Cmp("v1.2.3", "1.2.3"), 0);
  EXPECT_EQ(Cmp("1.2.3+build.5", "1.2.3"), 0);
  EXPECT_LT(Cmp("1.3.0-rc.1", "1.3.0"), 0);
  EXPECT_LT(Cmp("1.3.0-alpha", "1.3.0-alpha.1"), 0);
  EXPECT_LT(Cmp("1.3.0-alpha.1", "1.3.0-alpha.beta"), 0);
  EXPECT_LT(Cmp("1.3.0-rc.2", "1.3.0-rc.10"), 0);
  EXPECT_GT(Cmp("1.3.0-rc.1", "1.2.9"), 0);
}

TEST(Update, NotVersions) {
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "01.2.3", "1.2.x", "latest", "1.2.3-",
                          "<html>", "1.2.3 garbage"}) {
    EXPECT_FALSE(ParseSemVer(bad)) << bad;
  }
  EXPECT_TRUE(ParseSemVer("1.2.3\n"));
}

TEST(Update, ChecksumsTxt) {
  std::string sums =
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  install.sh\n"
      "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789 *ss-linux-x86_64.tar.gz\n"
      "short  ss-linux-aarch64.tar.gz\n";
  EXPECT_EQ(ChecksumFor(sums, "ss-linux-x86_64.tar.gz"),
            "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  EXPECT_FALSE(ChecksumFor(sums, "ss-linux-aarch64.tar.gz"));
  EXPECT_FALSE(ChecksumFor(sums, "ss"));
  EXPECT_EQ(ReleaseArchiveName().rfind("ss-linux-", 0), 0u);
}

}  // namespace
}  // namespace ss
