#include "tree_size.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "fs.hpp"
#include "strings.hpp"

namespace ss {
namespace {

void Write(const std::string& path, size_t bytes) { AtomicWrite(path, std::string(bytes, 'x')); }

int64_t DirSize(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_size;
}

TEST(TreeSize, SumsFilesAndDirectoriesLikeDuApparentSize) {
  TempDir tmp;
  std::string root = tmp.path() + "/t";
  MakeDirs(root + "/a/b/c");
  Write(root + "/one", 1000);
  Write(root + "/a/two", 20000);
  Write(root + "/a/b/c/three", 7);
  int64_t dirs =
      DirSize(root) + DirSize(root + "/a") + DirSize(root + "/a/b") + DirSize(root + "/a/b/c");
  EXPECT_EQ(TreeSize(root), 1000 + 20000 + 7 + dirs);
  EXPECT_EQ(TreeSize(root + "/"), 1000 + 20000 + 7 + dirs);
  EXPECT_EQ(TreeSize(root, 1), TreeSize(root, 8));
}

TEST(TreeSize, NeverFollowsSymbolicLinks) {
  TempDir tmp;
  std::string root = tmp.path() + "/t";
  MakeDirs(root);
  MakeDirs(tmp.path() + "/outside");
  Write(tmp.path() + "/outside/big", 1 << 20);
  ASSERT_EQ(::symlink((tmp.path() + "/outside").c_str(), (root + "/dir-link").c_str()), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/outside/big").c_str(), (root + "/file-link").c_str()), 0);
  int64_t expected = DirSize(root) + DirSize(root + "/dir-link") + DirSize(root + "/file-link");
  EXPECT_EQ(TreeSize(root), expected);
  EXPECT_LT(TreeSize(root), 1 << 20);
  // The root itself as a link: its own size only.
  ASSERT_EQ(::symlink((tmp.path() + "/outside").c_str(), (tmp.path() + "/root-link").c_str()), 0);
  EXPECT_EQ(TreeSize(tmp.path() + "/root-link"), DirSize(tmp.path() + "/root-link"));
}

TEST(TreeSize, CountsHardLinksOncePerTree) {
  TempDir tmp;
  std::string root = tmp.path() + "/t";
  MakeDirs(root + "/sub");
  Write(root + "/f", 5000);
  ASSERT_EQ(::link((root + "/f").c_str(), (root + "/sub/g").c_str()), 0);
  EXPECT_EQ(TreeSize(root), 5000 + DirSize(root) + DirSize(root + "/sub"));
}

TEST(TreeSize, ManyTreesInOrderAndMissingOnes) {
  TempDir tmp;
  std::vector<TreeRoot> roots;
  int dir_fd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir_fd, 0);
  std::vector<int64_t> expected;
  for (int i = 0; i < 50; ++i) {
    std::string name = Cat("p", i);
    MakeDirs(Cat(tmp.path(), "/", name, "/d"));
    Write(Cat(tmp.path(), "/", name, "/d/f"), static_cast<size_t>(i * 100));
    expected.push_back(i * 100 + DirSize(Cat(tmp.path(), "/", name)) +
                       DirSize(Cat(tmp.path(), "/", name, "/d")));
    roots.push_back({dir_fd, name});
  }
  roots.push_back({dir_fd, "missing"});
  expected.push_back(-1);
  EXPECT_EQ(TreeSizes(roots), expected);
  EXPECT_EQ(TreeSizes(roots, 1), expected);
  ::close(dir_fd);
  EXPECT_TRUE(TreeSizes({}).empty());
}

TEST(TreeSize, DeepTreesDoNotRunOutOfDescriptors) {
  TempDir tmp;
  std::string path = tmp.path() + "/t";
  std::string root = path;
  for (int i = 0; i < 300; ++i) path += "/d";
  MakeDirs(path);
  Write(path + "/f", 3);
  int64_t size = TreeSize(root);
  EXPECT_GT(size, 300 * 3);
}

}  // namespace
}  // namespace ss
