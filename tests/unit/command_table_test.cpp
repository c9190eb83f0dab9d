// The command table every tool reads its command line with: parsing, the usage errors, help and
// completion, on a table made for the test, and on the tools' own tables.
#include "command_table.hpp"

#include <gtest/gtest.h>

#include "error.hpp"

namespace ss {
namespace {

const CommandTable& Table() {
  static const CommandTable table({
      .prefix = "ss t ",
      .help_command = "ss t",
      .usage = "usage: ss t COMMAND",
      .about = "A tool for the test.",
      .commands = {{.name = "go", .args = "[WHERE]", .max_args = 1, .help = "go somewhere"},
                   {.name = "image build", .help = "build the image; slowly"},
                   {.name = "image rm",
                    .args = "ID...",
                    .min_args = 1,
                    .max_args = kAnyNumber,
                    .help = "remove images (--yes)"},
                   {.name = "list", .help = "list them", .aliases = {"ls"}, .spelled = "ss ts"}},
      .options =
          {{.name = "where",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "the place (default: here)"},
           {.name = "count", .kind = OptionSpec::kNumber, .value = "N", .help = "how many"},
           {.name = "tag",
            .kind = OptionSpec::kTexts,
            .value = "T",
            .help = "a tag (repeatable)",
            .commands = {"image build"}},
           {.name = "yes", .letter = 'y', .help = "do not ask", .commands = {"image rm", "list"}}},
  });
  return table;
}

// The message and hints of the usage error `args` make.
std::string Mistake(const std::vector<std::string>& args) {
  try {
    Table().Parse(args);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    std::string out = e.what();
    for (const auto& h : e.hints()) out += "\nhint: " + h;
    return out;
  }
  return "no error";
}

TEST(CommandTable, ParsesTheCommandItsWordsAndItsOptions) {
  ParsedLine line = Table().Parse({"image", "rm", "a", "b", "-y", "--where", "x", "--count=3"});
  ASSERT_TRUE(line.command);
  EXPECT_EQ(line.command->name, "image rm");
  EXPECT_EQ(line.args, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(line.Flag("yes"));
  EXPECT_EQ(line.Text("where"), "x");
  EXPECT_EQ(line.Number("count", 1), 3);
  line = Table().Parse({"image", "build", "--tag", "a", "--tag", "b"});
  EXPECT_EQ(line.Texts("tag"), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(line.Flag("yes"));
  EXPECT_EQ(line.Number("count", 7), 7);
  EXPECT_EQ(line.Text("where", "here"), "here");
  EXPECT_TRUE(Table().Parse({"ls"}).Is("list"));
  EXPECT_TRUE(Table().Parse({"--help"}).help);
  EXPECT_EQ(Table().Parse({}).command, nullptr);
  // An option is named in full: a prefix would change meaning when an option is added.
  EXPECT_ANY_THROW(Table().Parse({"go", "--wher", "x"}));
}

TEST(CommandTable, EveryMistakeSaysWhatToType) {
  EXPECT_EQ(Mistake({"og"}),
            "unknown command 'og'\nhint: did you mean 'go'?\nhint: see 'ss t --help'");
  EXPECT_EQ(Mistake({"image"}), "usage: ss t image build|rm\nhint: see 'ss t --help'");
  EXPECT_EQ(Mistake({"image", "biuld"}),
            "unknown command 'image biuld'\nhint: did you mean 'image build'?\nhint: see 'ss t "
            "--help'");
  EXPECT_EQ(Mistake({"go", "a", "b"}),
            "unexpected argument 'b'\nhint: usage: ss t go [WHERE]\nhint: see 'ss t go --help'");
  EXPECT_EQ(Mistake({"image", "rm"}),
            "usage: ss t image rm ID...\nhint: see 'ss t image rm --help'");
  EXPECT_EQ(Mistake({"go", "-y"}),
            "--yes is not an option of 'ss t go'\nhint: --yes goes with ss t image rm and ss "
            "ts\nhint: see 'ss t go --help'");
  EXPECT_EQ(Mistake({"ls", "--tag", "x"}),
            "--tag is not an option of 'ss ts'\nhint: --tag goes with ss t image build\nhint: see "
            "'ss ts --help'");
}

TEST(CommandTable, HelpIsMadeFromTheTable) {
  EXPECT_EQ(Table().Help(), R"(usage: ss t COMMAND

A tool for the test.

Commands:
  go [WHERE]            go somewhere
  image build           build the image; slowly
  image rm ID...        remove images (--yes)
  list                  list them

Options:
  --where NAME          the place (default: here)
  --count N             how many
  --tag T               a tag (repeatable)
  -y, --yes             do not ask
  -h, --help            show this help
)");
}

TEST(CommandTable, LongLinesWrapUnderTheirColumn) {
  std::string text(30, 'a');
  for (int i = 0; i < 5; ++i) text += " " + std::string(15, 'b');
  EXPECT_EQ(Wrap(text, 60, 24),
            std::string(30, 'a') + "\n" + std::string(24, ' ') + std::string(15, 'b') + " " +
                std::string(15, 'b') + "\n" + std::string(24, ' ') + std::string(15, 'b') + " " +
                std::string(15, 'b') + "\n" + std::string(24, ' ') + std::string(15, 'b'));
}

TEST(CommandTable, CompletionSaysWhatEachCandidateIs) {
  std::string out;
  EXPECT_TRUE(Table().Complete({""}, out));
  EXPECT_EQ(out, "go\tgo somewhere\nimage\timage commands\nlist\tlist them\nls\tlist them\n");
  out.clear();
  EXPECT_TRUE(Table().Complete({"image", "b"}, out));
  EXPECT_EQ(out, "build\tbuild the image\nrm\tremove images\n");
  out.clear();
  EXPECT_TRUE(Table().Complete({"image", "build", "--"}, out));
  EXPECT_EQ(out, "--where\tthe place\n--count\thow many\n--tag\ta tag\n--help\tshow this help\n");
  out.clear();
  EXPECT_FALSE(Table().Complete({"nope", ""}, out));
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace ss
