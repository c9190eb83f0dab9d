#include "command_table.hpp"

#include <algorithm>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <iostream>
#include <set>

#include "error.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {
namespace {

constexpr size_t kWidth = 100;  // help's lines
constexpr size_t kColumn = 24;  // where help's descriptions start

// What completion shows of a help text: up to its first ';' or parenthesis.
std::string Short(const std::string& help) {
  std::string s = help.substr(0, std::min(help.find(';'), help.find(" (")));
  return std::string(Trim(s));
}

// "  LEFT<padding>TEXT", TEXT wrapped; LEFT alone on its line when it is too long.
std::string Row(const std::string& left, const std::string& text) {
  std::string out = Cat("  ", left);
  if (out.size() + 2 <= kColumn) {
    out.append(kColumn - out.size(), ' ');
  } else {
    out += Cat("\n", std::string(kColumn, ' '));
  }
  return Cat(out, Wrap(text, kWidth, kColumn), "\n");
}

std::vector<std::string> Words(const std::string& name) { return Split(name, ' '); }

// A command's name, then its aliases.
std::vector<std::string> NamesOf(const CommandSpec& c) {
  std::vector<std::string> names = {c.name};
  names.insert(names.end(), c.aliases.begin(), c.aliases.end());
  return names;
}

// Every word that is not an option goes to "words". Options are never guessed from a prefix
// (--js for --json): a script that relies on one breaks when an option is added.
po::variables_map ParseWithWords(const std::vector<std::string>& args,
                                 const po::options_description& desc) {
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args)
                .options(desc)
                .positional(pos)
                .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                .run(),
            vm);
  po::notify(vm);
  return vm;
}

}  // namespace

std::string Wrap(const std::string& text, size_t width, size_t indent) {
  std::string out, line;
  size_t room = width > indent ? width - indent : 1;
  for (const auto& word : Split(text, ' ')) {
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > room) {
      out += Cat(line, "\n", std::string(indent, ' '));
      line.clear();
    }
    line += line.empty() ? word : Cat(" ", word);
  }
  return out + line;
}

bool ParsedLine::Flag(const std::string& name) const {
  auto it = given.find(name);
  return it != given.end() && it->second.as<bool>();
}

std::string ParsedLine::Text(const std::string& name, std::string fallback) const {
  auto it = given.find(name);
  return it == given.end() ? fallback : it->second.as<std::string>();
}

int ParsedLine::Number(const std::string& name, int fallback) const {
  auto it = given.find(name);
  return it == given.end() ? fallback : it->second.as<int>();
}

int ParsedLine::Seconds(const std::string& name, int fallback) const {
  if (!Given(name)) return fallback;
  int n = Number(name, fallback);
  if (n <= 0) {
    throw Error(kExitUsage, Cat("--", name, " must be a positive number of seconds, not ", n));
  }
  return n;
}

std::vector<std::string> ParsedLine::Texts(const std::string& name) const {
  auto it = given.find(name);
  return it == given.end() ? std::vector<std::string>{} : it->second.as<std::vector<std::string>>();
}

bool ParsedLine::Given(const std::string& name) const {
  auto it = given.find(name);
  return it != given.end() && !it->second.defaulted();
}

CommandTable::CommandTable(ToolSpec spec) : spec_(std::move(spec)) {
  spec_.options.push_back({.name = "help", .letter = 'h', .help = "show this help"});
}

std::string CommandTable::Spelled(const CommandSpec& command) const {
  return command.spelled.empty() ? Cat(spec_.prefix, command.name) : command.spelled;
}

const CommandSpec* CommandTable::Match(const std::vector<std::string>& words, size_t* used) const {
  const CommandSpec* best = nullptr;
  size_t best_len = 0;
  for (const auto& c : spec_.commands) {
    for (const auto& name : NamesOf(c)) {
      auto w = Words(name);
      if (w.size() <= best_len || w.size() > words.size()) continue;
      if (std::equal(w.begin(), w.end(), words.begin())) {
        best = &c;
        best_len = w.size();
      }
    }
  }
  if (used) *used = best_len;
  return best;
}

ParsedLine CommandTable::Parse(const std::vector<std::string>& args) const {
  po::options_description desc;
  auto add = desc.add_options();
  for (const auto& o : spec_.options) {
    std::string key = o.letter ? Cat(o.name, ",", o.letter) : o.name;
    switch (o.kind) {
      case OptionSpec::kSwitch:
        add(key.c_str(), po::bool_switch());
        break;
      case OptionSpec::kText:
        add(key.c_str(), po::value<std::string>());
        break;
      case OptionSpec::kNumber:
        add(key.c_str(), po::value<int>());
        break;
      case OptionSpec::kTexts:
        add(key.c_str(), po::value<std::vector<std::string>>()->composing());
        break;
    }
  }
  add("words", po::value<std::vector<std::string>>());
  ParsedLine line;
  line.given = ParseWithWords(args, desc);
  line.help = line.Flag("help");
  std::vector<std::string> words = line.Texts("words");
  if (line.help || words.empty()) return line;

  size_t used = 0;
  line.command = Match(words, &used);
  if (!line.command) {
    // A word that starts commands of its own ("image") needs one of them after it.
    std::vector<std::string> firsts, seconds;
    for (const auto& c : spec_.commands) {
      for (const auto& name : NamesOf(c)) {
        auto w = Words(name);
        if (std::find(firsts.begin(), firsts.end(), w[0]) == firsts.end()) firsts.push_back(w[0]);
        if (w.size() > 1 && w[0] == words[0] && name == c.name) seconds.push_back(w[1]);
      }
    }
    if (!seconds.empty()) {
      std::string group = Cat(spec_.prefix, words[0]);
      if (words.size() == 1) {
        throw UsageError(Cat("usage: ", group, " ", Join(seconds, "|")), spec_.help_command);
      }
      std::vector<std::string> hints;
      if (auto guess = Suggest(words[1], seconds)) {
        hints.push_back(Cat("did you mean '", words[0], " ", *guess, "'?"));
      }
      throw UsageError(Cat("unknown command '", words[0], " ", words[1], "'"), spec_.help_command,
                       std::move(hints));
    }
    throw UnknownCommandError(words[0], firsts, spec_.help_command);
  }
  const CommandSpec& c = *line.command;
  line.args.assign(words.begin() + static_cast<std::ptrdiff_t>(used), words.end());
  std::string usage = Cat("usage: ", Spelled(c), c.args.empty() ? "" : " ", c.args);
  if (line.args.size() < c.min_args) throw UsageError(usage, Spelled(c));
  if (line.args.size() > c.max_args) {
    throw UsageError(Cat("unexpected argument '", line.args[c.max_args], "'"), Spelled(c), {usage});
  }
  for (const auto& o : spec_.options) {
    if (o.commands.empty() || !line.Given(o.name)) continue;
    if (std::find(o.commands.begin(), o.commands.end(), c.name) != o.commands.end()) continue;
    std::string owners;
    for (size_t i = 0; i < o.commands.size(); ++i) {
      std::string spelled = Cat(spec_.prefix, o.commands[i]);
      for (const auto& other : spec_.commands) {
        if (other.name == o.commands[i]) spelled = Spelled(other);
      }
      owners += Cat(i == 0 ? "" : i + 1 == o.commands.size() ? " and " : ", ", spelled);
    }
    throw UsageError(Cat("--", o.name, " is not an option of '", Spelled(c), "'"), Spelled(c),
                     {Cat("--", o.name, " goes with ", owners)});
  }
  return line;
}

std::string CommandTable::Help() const {
  std::string out = Cat(spec_.usage, "\n\n");
  if (!spec_.about.empty()) out += Cat(spec_.about, "\n\n");
  out += "Commands:\n";
  for (const auto& c : spec_.commands) {
    out += Row(Cat(c.name, c.args.empty() ? "" : " ", c.args), c.help);
  }
  out += "\n";
  if (!spec_.notes.empty()) out += Cat(spec_.notes, "\n\n");
  std::vector<std::string> sections = {""};
  for (const auto& o : spec_.options) {
    if (std::find(sections.begin(), sections.end(), o.section) == sections.end()) {
      sections.push_back(o.section);
    }
  }
  for (const auto& section : sections) {
    out += section.empty() ? "Options:\n" : Cat("\n", section, ":\n");
    for (const auto& o : spec_.options) {
      if (o.section != section) continue;
      std::string left = o.letter ? Cat("-", o.letter, ", --", o.name) : Cat("--", o.name);
      if (!o.value.empty()) left += Cat(" ", o.value);
      out += Row(left, o.help);
    }
  }
  return out;
}

int CommandTable::ShowHelp(bool asked) const {
  (asked ? std::cout : std::cerr) << Help();
  return asked ? 0 : kExitUsage;
}

std::string CommandTable::CompleteOptions(const CommandSpec& command) const {
  std::string out;
  for (const auto& o : spec_.options) {
    const auto& cs = o.commands;
    if (!cs.empty() && std::find(cs.begin(), cs.end(), command.name) == cs.end()) continue;
    out += Cat("--", o.name, "\t", Short(o.help), "\n");
  }
  return out;
}

bool CommandTable::Complete(const std::vector<std::string>& words, std::string& out) const {
  size_t current = words.empty() ? 0 : words.size() - 1;
  bool any = false;
  if (current <= 1) {
    // The command's first word, or the second of one that has two ("image build").
    std::set<std::string> seen;
    for (const auto& c : spec_.commands) {
      for (const auto& name : NamesOf(c)) {
        auto w = Words(name);
        if (current == 1 && (w.size() < 2 || w[0] != words[0])) continue;
        const std::string& word = w[current];
        if (!seen.insert(word).second) continue;
        bool group = current == 0 && w.size() > 1 && !Match({word});
        std::string what = group                ? Cat(word, " commands")
                           : !c.summary.empty() ? c.summary
                                                : Short(c.help);
        out += Cat(word, "\t", what, "\n");
        any = true;
      }
    }
    if (current == 0) return true;
  }
  const CommandSpec* c = Match({words.begin(), words.end() - 1});
  if (c) out += CompleteOptions(*c);
  return any || c;
}

}  // namespace ss
