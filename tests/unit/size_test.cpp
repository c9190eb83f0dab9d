#include "size.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

TEST(Size, ParsesTheSpecForms) {
  EXPECT_EQ(ParseSize("8GB"), 8 * kGiB);
  EXPECT_EQ(ParseSize("512MB"), 512 * kMiB);
  EXPECT_EQ(ParseSize("1TB"), kTiB);
  EXPECT_EQ(ParseSize("16gb"), 16 * kGiB);
  EXPECT_EQ(ParseSize("16Gb"), 16 * kGiB);
}

TEST(Size, RejectsEverythingElse) {
  for (const char* bad :
       {"", "8", "8G", "GB8", "8 GB", "8.5GB", "-1GB", "8KB", "8GiB", "GB", "99999999999999GB"}) {
    EXPECT_FALSE(ParseSize(bad).has_value()) << bad;
  }
}

TEST(Size, Formats) {
  EXPECT_EQ(FormatSizeConfig(16 * kGiB), "16GB");
  EXPECT_EQ(FormatSizeConfig(512 * kMiB), "512MB");
  EXPECT_EQ(FormatSizeConfig(2 * kTiB), "2TB");
  EXPECT_EQ(FormatSizeConfig(1536 * kMiB), "1536MB");
  EXPECT_EQ(FormatSizeHuman(16 * kGiB), "16 GB");
  EXPECT_EQ(FormatSizeHuman(145 * kMiB), "145 MB");
  EXPECT_EQ(FormatSizeHuman(3 * kGiB + kGiB / 5), "3.2 GB");
  EXPECT_EQ(FormatSizeHuman(100), "100 B");
}

}  // namespace
}  // namespace ss
