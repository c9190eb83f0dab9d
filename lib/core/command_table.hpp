// A tool's commands and options in one table, in the manner of git's subcommand tables: its
// help text, its completion (with what each command and option is), did-you-mean, argument
// counts, and which options go with which command all come from the table.
//
//   const CommandTable& Table() {
//     static const CommandTable t({.prefix = "ss ", .help_command = "ss snap", ...});
//     return t;
//   }
//   ParsedLine line = Table().Parse(args);   // exit 64 for anything the table does not allow
#pragma once

#include <boost/program_options/variables_map.hpp>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace ss {

constexpr size_t kAnyNumber = std::numeric_limits<size_t>::max();

struct OptionSpec {
  enum Kind { kSwitch, kText, kNumber, kTexts };  // kTexts: repeatable
  std::string name{};                             // the long name: "sandbox"
  char letter = 0;                                // the short one: 'y' for -y
  Kind kind = kSwitch;
  std::string value{};  // what help calls its value: "NAME"
  std::string help{};   // help's words (wrapped there); completion shows them up to ';' or ' ('
  // The commands it goes with, by name; none: every command.
  std::vector<std::string> commands{};
  std::string section{};  // help lists it under "SECTION:" after the other options
};

struct CommandSpec {
  std::string name{};                  // "restore"; a command of a command: "image build"
  std::string args{};                  // as help shows them: "NAME", "[PROJECT]"
  size_t min_args = 0;                 // words after the name
  size_t max_args = 0;                 // kAnyNumber: no limit
  std::string help{};                  // help's words (wrapped there)
  std::string summary{};               // completion's; empty: help up to ';' or ' ('
  std::vector<std::string> aliases{};  // other names: "ls"
  std::string spelled{};               // how users type it, when not the tool's prefix and name:
                                       // "ss snapshots"
};

struct ToolSpec {
  std::string prefix{};        // how the tool's commands are typed: "ss vm ", or "ss " when they
                               // are ss's own verbs
  std::string help_command{};  // the command whose --help shows this: "ss vm"
  std::string usage{};         // help's first line(s): "usage: ss vm COMMAND [OPTIONS]"
  std::string about{};         // the paragraph(s) after it, wrapped as written
  std::vector<CommandSpec> commands{};
  std::string notes{};                // between the commands and the options, wrapped as written
  std::vector<OptionSpec> options{};  // --help is added
};

// A command line as the table reads it.
struct ParsedLine {
  const CommandSpec* command = nullptr;  // none when no word was given (or with --help)
  std::vector<std::string> args;         // the words after the command's name
  boost::program_options::variables_map given;
  bool help = false;

  bool Flag(const std::string& name) const;
  std::string Text(const std::string& name, std::string fallback = "") const;
  int Number(const std::string& name, int fallback) const;
  // A number of seconds: `fallback` when not given; exit 64 when given and not positive.
  int Seconds(const std::string& name, int fallback) const;
  std::vector<std::string> Texts(const std::string& name) const;
  bool Given(const std::string& name) const;  // on the command line, not defaulted
  bool Is(const std::string& command) const {
    return this->command && this->command->name == command;
  }
};

class CommandTable {
 public:
  explicit CommandTable(ToolSpec spec);

  // Parses `args`: the command (the longest name its first words spell: "image build" before
  // "image"), its arguments counted and every option given checked to be the command's. Every
  // mistake is a UsageError (exit 64) naming what to type; an unknown command gets a
  // did-you-mean. With --help, or no words at all, nothing is checked.
  ParsedLine Parse(const std::vector<std::string>& args) const;

  std::string Help() const;
  // The help, asked for (stdout, 0) or as the answer to no command at all (stderr, 64).
  int ShowHelp(bool asked) const;

  // Completion lines, "CANDIDATE<tab>WHAT IT IS": the commands for the command word(s) being
  // typed (`words`, the last one being completed, as `ss --complete` gives them), else the
  // options of the command the words name. Returns false when the words name no command.
  bool Complete(const std::vector<std::string>& words, std::string& out) const;
  std::string CompleteOptions(const CommandSpec& command) const;

  // The command `words` start with, and how many words its name takes; nullptr for none.
  const CommandSpec* Match(const std::vector<std::string>& words, size_t* used = nullptr) const;
  const ToolSpec& spec() const { return spec_; }
  std::string Spelled(const CommandSpec& command) const;  // "ss restore"

 private:
  ToolSpec spec_;
};

// `text` wrapped to `width` columns, every line after the first indented by `indent` spaces.
std::string Wrap(const std::string& text, size_t width, size_t indent);

}  // namespace ss
