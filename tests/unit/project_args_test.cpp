#include "project_args.hpp"

#include <gtest/gtest.h>

#include <boost/program_options/errors.hpp>

#include "error.hpp"

namespace ss {
namespace {

using C = ProjectOptions::Command;

TEST(ProjectArgs, TheShortForms) {
  ProjectOptions o = ParseProjectArgs({"new", "my-api"});
  EXPECT_EQ(o.command, C::kNew);
  EXPECT_EQ(o.name, "my-api");
  EXPECT_FALSE(o.github);

  o = ParseProjectArgs({"new", "my-api", "--github", "--private"});
  EXPECT_TRUE(o.github);
  EXPECT_TRUE(o.is_private);
  o = ParseProjectArgs({"new", "--github", "my-api"});
  EXPECT_EQ(o.name, "my-api");
  EXPECT_TRUE(o.github);
  o = ParseProjectArgs({"new", "x1", "--from", "../old"});
  EXPECT_EQ(o.from, "../old");
  o = ParseProjectArgs({"new", "x1", "--from=../old"});
  EXPECT_EQ(o.from, "../old");

  o = ParseProjectArgs({"list"});
  EXPECT_EQ(o.command, C::kList);
  o = ParseProjectArgs({"list", "--json", "--no-size"});
  EXPECT_TRUE(o.json);
  EXPECT_TRUE(o.no_size);
  EXPECT_EQ(ParseProjectArgs({}).command, C::kList);

  o = ParseProjectArgs({"delete", "x1"});
  EXPECT_EQ(o.command, C::kDelete);
  EXPECT_FALSE(o.yes);
  EXPECT_TRUE(ParseProjectArgs({"delete", "x1", "--yes"}).yes);
  EXPECT_TRUE(ParseProjectArgs({"delete", "-y", "x1"}).yes);

  o = ParseProjectArgs({"show", "x1", "--json"});
  EXPECT_EQ(o.command, C::kShow);
  EXPECT_EQ(o.name, "x1");
  EXPECT_TRUE(o.json);
}

TEST(ProjectArgs, HelpWinsEverywhere) {
  EXPECT_EQ(ParseProjectArgs({"--help"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectArgs({"-h"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectArgs({"new", "--help"}).command, C::kHelp);
  EXPECT_EQ(ParseProjectArgs({"delete", "-h"}).command, C::kHelp);
}

void ExpectUsage(const std::vector<std::string>& args, const std::string& message,
                 const std::string& hint) {
  try {
    ParseProjectArgs(args);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_EQ(std::string(e.what()), message);
    ASSERT_EQ(e.hints().size(), 1u);
    EXPECT_EQ(e.hints()[0], hint);
  }
}

TEST(ProjectArgs, UsageErrors) {
  ExpectUsage({"new"}, "usage: ss new NAME [--from PATH] [--github [--private]] [--copy]",
              "see 'ss new --help'");
  ExpectUsage({"new", "a1", "b1"},
              "usage: ss new NAME [--from PATH] [--github [--private]] [--copy]",
              "see 'ss new --help'");
  ExpectUsage({"delete"}, "usage: ss delete NAME [--yes] [--force]", "see 'ss delete --help'");
  ExpectUsage({"show"}, "usage: ss project show NAME [--json]", "see 'ss project show --help'");
  ExpectUsage({"list", "x1"}, "usage: ss list [--json] [--no-size]", "see 'ss list --help'");
  ExpectUsage({"new", "x1", "--private"}, "--private needs --github", "see 'ss new --help'");
  ExpectUsage({"new", "x1", "--json"}, "--json is not an option of 'new'", "see 'ss new --help'");
  ExpectUsage({"list", "--yes"}, "--yes is not an option of 'list'", "see 'ss list --help'");
  ExpectUsage({"delete", "x1", "--github"}, "--github is not an option of 'delete'",
              "see 'ss delete --help'");
  ExpectUsage({"show", "x1", "--no-size"}, "--no-size is not an option of 'show'",
              "see 'ss project show --help'");
  ExpectUsage({"new", "x1", "--from", ""}, "--from needs a PATH", "see 'ss new --help'");
  ExpectUsage({"frobnicate"}, "unknown project command 'frobnicate'",
              "use new, list, show, delete or path; see 'ss project --help'");
}

TEST(ProjectArgs, UnknownOrAbbreviatedFlagsAreRefused) {
  EXPECT_THROW(ParseProjectArgs({"list", "--jsn"}), boost::program_options::error);
  EXPECT_THROW(ParseProjectArgs({"new", "x1", "--priv"}), boost::program_options::error);
  EXPECT_THROW(ParseProjectArgs({"new", "x1", "--from"}), boost::program_options::error);
}

TEST(ProjectArgs, AnythingAfterDoubleDashIsAName) {
  ProjectOptions o = ParseProjectArgs({"new", "--", "--github"});
  EXPECT_EQ(o.name, "--github");
  EXPECT_FALSE(o.github);
}

}  // namespace
}  // namespace ss

namespace ss {
namespace {

TEST(ProjectArgs, PathTakesAnOptionalName) {
  ProjectOptions o = ParseProjectArgs({"path"});
  EXPECT_EQ(o.command, ProjectOptions::Command::kPath);
  EXPECT_EQ(o.name, "");
  o = ParseProjectArgs({"path", "my-app"});
  EXPECT_EQ(o.command, ProjectOptions::Command::kPath);
  EXPECT_EQ(o.name, "my-app");
  EXPECT_THROW(ParseProjectArgs({"path", "a", "b"}), Error);
  EXPECT_THROW(ParseProjectArgs({"path", "--json"}), Error);
}

}  // namespace
}  // namespace ss
