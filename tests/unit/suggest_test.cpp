#include "suggest.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

TEST(Suggest, Typos) {
  std::vector<std::string> verbs = {"status", "stop", "start", "new", "list", "delete", "config"};
  EXPECT_EQ(Suggest("statu", verbs), "status");
  EXPECT_EQ(Suggest("stauts", verbs), "status");
  EXPECT_EQ(Suggest("lsit", verbs), "list");
  EXPECT_EQ(Suggest("confg", verbs), "config");
  EXPECT_FALSE(Suggest("my-app", verbs).has_value());
  EXPECT_FALSE(Suggest("", verbs).has_value());
}

TEST(Suggest, Distance) {
  EXPECT_EQ(EditDistance("abc", "abc"), 0u);
  EXPECT_EQ(EditDistance("abc", "acb"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace ss
