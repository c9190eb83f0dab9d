#include "shares.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

std::string Problem(const std::string& text) {
  std::string problem;
  EXPECT_FALSE(ParseMountSpec(text, &problem).has_value()) << text;
  return problem;
}

TEST(Shares, MountSpecs) {
  std::string problem;
  auto m = ParseMountSpec("~/data:/data:ro", &problem);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host, "~/data");
  EXPECT_EQ(m->guest, "/data");
  EXPECT_TRUE(m->read_only);
  m = ParseMountSpec("/a:b/c:/home/sandbox/x", &problem);  // HOST may hold ':'
  ASSERT_TRUE(m);
  EXPECT_EQ(m->host, "/a:b/c");
  EXPECT_EQ(m->guest, "/home/sandbox/x");
  EXPECT_FALSE(m->read_only);
  m = ParseMountSpec("/a:/mnt/x:rw", &problem);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->guest, "/mnt/x");
  EXPECT_EQ(Problem("/a"), "'/a': expected HOST:GUEST or HOST:GUEST:ro");
  EXPECT_EQ(Problem(":/x"), "':/x': expected HOST:GUEST or HOST:GUEST:ro");
  EXPECT_EQ(Problem("/a:x"), "'/a:x': GUEST must be an absolute path in the sandbox");
  for (const char* bad :
       {"/a:/", "/a:/etc", "/a:/etc/x", "/a:/usr/local/bin", "/a:/proc/1", "/a:/home/sandbox",
        "/a:/home/sandbox/.ssh", "/a:/home/sandbox/.claude", "/a:/home/sandbox/projects/p",
        "/a:/mnt/deploy", "/a:/workspace", "/a:/tmp", "/a:/run/x", "/a:/root"}) {
    EXPECT_NE(Problem(bad).find("is the system's or ss's own"), std::string::npos) << bad;
  }
  for (const char* bad : {"/a:/x/../etc", "/a:/x//y", "/a:/x/", "/a:/x/./y"}) {
    EXPECT_NE(Problem(bad).find("plain path"), std::string::npos) << bad;
  }
  EXPECT_NE(Problem("/a:/x y").find("spaces"), std::string::npos);
  EXPECT_NE(Problem("/a:/x\ny").find("spaces"), std::string::npos);
  EXPECT_NE(Problem("/a\n:/x").find("control"), std::string::npos);
}

TEST(Shares, FolderNames) {
  EXPECT_EQ(FolderShareName("/home/u/My App!"), "my-app");
  EXPECT_EQ(FolderShareName("/srv/app"), "app");
  EXPECT_EQ(FolderShareName("/srv/2024-report"), "folder-2024-report");
  EXPECT_EQ(FolderShareName("/srv/ünï"), "n");
  EXPECT_EQ(FolderShareName("/srv/..."), "folder");
  EXPECT_EQ(FolderShareName(std::string("/srv/") + std::string(80, 'a')), std::string(40, 'a'));
}

}  // namespace
}  // namespace ss
