#include "menu.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

TEST(Menu, TheProjectMenuIsTheSpecsBox) {
  std::string menu =
      ProjectMenu({{"my-app", "2h ago"}, {"client-website", "1d ago"}, {"experiments", "3d ago"}});
  EXPECT_EQ(menu,
            "╭───────────────────────────────────────────────────────────╮\n"
            "│  Super-Sandbox                                            │\n"
            "│                                                           │\n"
            "│  Projects:                                                │\n"
            "│    1. my-app                         (last: 2h ago)       │\n"
            "│    2. client-website                 (last: 1d ago)       │\n"
            "│    3. experiments                    (last: 3d ago)       │\n"
            "│                                                           │\n"
            "│  ──────────────────────────────────────────────────────── │\n"
            "│                                                           │\n"
            "│  [n] New project                                          │\n"
            "│  [s] Settings                                             │\n"
            "│  [q] Quit                                                 │\n"
            "│                                                           │\n"
            "╰───────────────────────────────────────────────────────────╯\n");
  EXPECT_EQ(ProjectMenuPrompt(3), "Select [1-3/n/s/q]: ");
  EXPECT_EQ(ProjectMenuPrompt(1), "Select [1/n/s/q]: ");
}

TEST(Menu, ALongNameWidensTheBox) {
  std::string name(50, 'a');
  std::string menu = ProjectMenu({{name, "now"}});
  EXPECT_NE(menu.find("1. " + name + " (last: now)"), std::string::npos) << menu;
}

TEST(Menu, TheFirstRunBoxIsTheSpecs) {
  EXPECT_EQ(FirstRunTop() + FirstRunLine("Project name: my-first-project") + FirstRunBottom(),
            "╭───────────────────────────────────────────────────────────╮\n"
            "│  Super-Sandbox                                            │\n"
            "│                                                           │\n"
            "│  No projects yet. Create one:                             │\n"
            "│                                                           │\n"
            "│  Project name: my-first-project                           │\n"
            "│                                                           │\n"
            "╰───────────────────────────────────────────────────────────╯\n");
}

TEST(Menu, TheSettingsBoxIsTheSpecs) {
  EXPECT_EQ(SettingsMenu({"4", "8 GB", "100 GB (34 GB used)"}),
            "╭───────────────────────────────────────────────────────────╮\n"
            "│  Settings                                                 │\n"
            "│                                                           │\n"
            "│  VM Resources:                                            │\n"
            "│    CPUs:      4                                           │\n"
            "│    Memory:    8 GB                                        │\n"
            "│    Disk:      100 GB (34 GB used)                         │\n"
            "│                                                           │\n"
            "│  ──────────────────────────────────────────────────────── │\n"
            "│                                                           │\n"
            "│  [1] Adjust VM resources                                  │\n"
            "│  [2] Reset VM (keeps projects)                            │\n"
            "│  [3] Factory reset (deletes everything)                   │\n"
            "│  [b] Back                                                 │\n"
            "│                                                           │\n"
            "╰───────────────────────────────────────────────────────────╯\n");
}

TEST(Menu, Choices) {
  EXPECT_EQ(ParseMenuChoice("2", 3, "nsq").number, 2u);
  EXPECT_EQ(ParseMenuChoice(" 3 ", 3, "nsq").number, 3u);
  EXPECT_EQ(ParseMenuChoice("4", 3, "nsq").number, 0u);
  EXPECT_EQ(ParseMenuChoice("0", 3, "nsq").number, 0u);
  EXPECT_EQ(ParseMenuChoice("N", 3, "nsq").letter, 'n');
  EXPECT_EQ(ParseMenuChoice("x", 3, "nsq").letter, 0);
  EXPECT_EQ(ParseMenuChoice("nn", 3, "nsq").letter, 0);
  EXPECT_EQ(ParseMenuChoice("", 3, "nsq").letter, 0);
  EXPECT_EQ(ParseMenuChoice("99999999999999999999", 3, "nsq").number, 0u);
  EXPECT_EQ(ParseMenuChoice("-1", 3, "nsq").number, 0u);
}

}  // namespace
}  // namespace ss
