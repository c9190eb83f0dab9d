#include "image.hpp"

#include <gtest/gtest.h>

#include "config.hpp"

namespace ss {
namespace {

TEST(Image, TheUsersPackagesArePartOfTheRecipe) {
  ImageBuildOptions plain = ImageOptionsFrom(Config::Parse("", "c.yaml"));
  EXPECT_TRUE(plain.packages.empty());
  EXPECT_TRUE(plain.npm.empty());
  EXPECT_EQ(ImageIdFor(plain), ImageIdFor(ImageBuildOptions{}));
  ImageBuildOptions debs =
      ImageOptionsFrom(Config::Parse("image:\n  packages: [sl, postgresql-client]\n", "c.yaml"));
  EXPECT_EQ(debs.packages, (std::vector<std::string>{"sl", "postgresql-client"}));
  ImageBuildOptions npm =
      ImageOptionsFrom(Config::Parse("image:\n  npm: [typescript]\n", "c.yaml"));
  EXPECT_EQ(npm.npm, std::vector<std::string>{"typescript"});
  EXPECT_NE(ImageIdFor(debs), ImageIdFor(plain));
  EXPECT_NE(ImageIdFor(npm), ImageIdFor(plain));
  EXPECT_NE(ImageIdFor(npm), ImageIdFor(debs));
  EXPECT_EQ(ImageIdFor(plain).rfind("bookworm-", 0), 0u);
}

}  // namespace
}  // namespace ss
