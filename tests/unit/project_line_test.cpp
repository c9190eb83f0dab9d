#include "project_line.hpp"

#include <gtest/gtest.h>

#include <boost/program_options/errors.hpp>

#include "error.hpp"

namespace ss {
namespace {

using C = ProjectLine::Command;

TEST(ProjectLine, TheShortForms) {
  ProjectLine o = ParseProjectLine({"new", "my-api"});
  EXPECT_EQ(o.command, C::kNew);
  EXPECT_EQ(o.name, "my-api");
  EXPECT_FALSE(o.github);

  o = ParseProjectLine({"new", "my-api", "--github", "--private"});
  EXPECT_TRUE(o.github);
  EXPECT_TRUE(o.is_private);
  o = ParseProjectLine({"new", "--github", "my-api"});
  EXPECT_EQ(o.name, "my-api");
  EXPECT_TRUE(o.github);
  o = ParseProjectLine({"new", "x1", "--from", "../old"});
  EXPECT_EQ(o.from, "../old");
  o = ParseProjectLine({"new", "x1", "--from=../old"});
  EXPECT_EQ(o.from, "../old");

  o = ParseProjectLine({"list"});
  EXPECT_EQ(o.command, C::kList);
  o = ParseProjectLine({"list", "--json", "--no-size"});
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.no_size);
  EXPECT_EQ(ParseProjectLine({}).command, C::kList);

  o = ParseProjectLine({"delete", "x1"});
  EXPECT_EQ(o.command, C::kDelete);
  EXPECT_FALSE(o.yes);
  EXPECT_TRUE(ParseProjectLine({"delete", "x1", "--yes"}).yes);
  EXPECT_TRUE(ParseProjectLine({"delete", "-y", "x1"}).yes);

  o = ParseProjectLine({"show", "x1", "--json"});
  EXPECT_EQ(o.command, C::kShow);
  EXPECT_EQ(o.name, "x1");
  EXPECT_TRUE(o.json);
}

TEST(ProjectLine, HelpWinsEverywhere) {
  EXPECT_EQ(ParseProjectLine({"--help"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectLine({"-h"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectLine({"new", "--help"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectLine({"delete", "-h"}).command, C::kHelp);
}

// The message and the hints of the usage error `args` make, one per line.
void ExpectUsage(const std::vector<std::string>& args, const std::string& expected) {
  try {
    ParseProjectLine(args);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    std::string got = e.what();
    for (const auto& h : e.hints()) got += "\nhint: " + h;
    EXPECT_EQ(got, expected);
  }
}

TEST(ProjectLine, UsageErrors) {
  ExpectUsage({"new"},
              "usage: ss new NAME [--from PATH] [--github [--private]] [--copy]\n"
              "hint: see 'ss new --help'");
  ExpectUsage({"new", "a1", "b1"},
              "unexpected argument 'b1'\n"
              "hint: usage: ss new NAME [--from PATH] [--github [--private]] [--copy]\n"
              "hint: see 'ss new --help'");
  ExpectUsage({"delete"}, "usage: ss delete NAME [--yes] [--force]\nhint: see 'ss delete --help'");
  ExpectUsage({"show"}, "usage: ss project show NAME [--json]\nhint: see 'ss project show --help'");
  ExpectUsage({"list", "x1"},
              "unexpected argument 'x1'\nhint: usage: ss list [--json] [--no-size]\n"
              "hint: see 'ss list --help'");
  ExpectUsage({"new", "x1", "--private"}, "--private needs --github\nhint: see 'ss new --help'");
  ExpectUsage({"new", "x1", "--json"},
              "--json is not an option of 'ss new'\nhint: --json goes with ss list and ss "
              "project show\nhint: see 'ss new --help'");
  ExpectUsage({"list", "--yes"},
              "--yes is not an option of 'ss list'\nhint: --yes goes with ss delete\n"
              "hint: see 'ss list --help'");
  ExpectUsage({"delete", "x1", "--github"},
              "--github is not an option of 'ss delete'\nhint: --github goes with ss new\n"
              "hint: see 'ss delete --help'");
  ExpectUsage({"show", "x1", "--no-size"},
              "--no-size is not an option of 'ss project show'\nhint: --no-size goes with ss "
              "list\nhint: see 'ss project show --help'");
  ExpectUsage({"new", "x1", "--from", ""}, "--from needs a PATH\nhint: see 'ss new --help'");
  ExpectUsage({"frobnicate"}, "unknown command 'frobnicate'\nhint: see 'ss project --help'");
  ExpectUsage({"shwo", "x1"},
              "unknown command 'shwo'\nhint: did you mean 'show'?\n"
              "hint: see 'ss project --help'");
}

TEST(ProjectLine, UnknownOrAbbreviatedFlagsAreRefused) {
  EXPECT_THROW(ParseProjectLine({"list", "--jsn"}), boost::program_options::error);
  EXPECT_THROW(ParseProjectLine({"new", "x1", "--priv"}), boost::program_options::error);
  EXPECT_THROW(ParseProjectLine({"new", "x1", "--from"}), boost::program_options::error);
}

TEST(ProjectLine, AnythingAfterDoubleDashIsAName) {
  ProjectLine o = ParseProjectLine({"new", "--", "--github"});
  EXPECT_EQ(o.name, "--github");
  EXPECT_FALSE(o.github);
}

}  // namespace
}  // namespace ss

namespace ss {
namespace {

TEST(ProjectLine, PathTakesAnOptionalName) {
  ProjectLine o = ParseProjectLine({"path"});
  EXPECT_EQ(o.command, ProjectLine::Command::kPath);
  EXPECT_EQ(o.name, "");
  o = ParseProjectLine({"path", "my-app"});
  EXPECT_EQ(o.command, ProjectLine::Command::kPath);
  EXPECT_EQ(o.name, "my-app");
  EXPECT_THROW(ParseProjectLine({"path", "a", "b"}), Error);
  EXPECT_THROW(ParseProjectLine({"path", "--json"}), Error);
}

}  // namespace
}  // namespace ss
