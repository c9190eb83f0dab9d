#include "project_line.hpp"

#include <boost/program_options.hpp>

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {

const char* const kProjectUsage =
    R"(usage: ss new NAME [--from PATH] [--github [--private]] [--copy]
       ss list [--json] [--no-size]
       ss delete NAME [--yes] [--force]
       ss project show NAME [--json]
       ss project path [NAME]

Create, list, show and delete projects: the folders in ~/super-sandbox/projects
($SS_HOME/projects) that every sandbox sees at /home/sandbox/projects. A NAME has 2 to 50
lowercase letters, digits and hyphens, starts with a letter and has no '--'.
ss project [new|list|show|delete] ... is the same as the short forms. ss project path prints
the folder of NAME (of all projects without NAME); `ss cd NAME` uses it (see ss init).

Options:
  --from PATH   new: copy this folder or git clone (history and all) instead of the scaffold
  --github      new: also create a GitHub repository with gh (public unless --private)
  --private     new: make that GitHub repository private
  --copy        new: the agent works in a copy on the sandbox's disk (projects.NAME.mode: copy;
                see ss-sync(1))
  --json        list, show: print one JSON document (see ss-json(7))
  --no-size     list: leave out the sizes (faster)
  -y, --yes     delete: do not ask (required when standard input is not a terminal)
  --force       delete: also when its working copy has changes not yet applied (saved to
                ~/super-sandbox/rescued/ first)
  -h, --help    show this help
)";

const std::vector<std::string>& ProjectSubcommands() {
  static const std::vector<std::string> subcommands = {"new", "list", "show", "delete", "path"};
  return subcommands;
}

namespace {

[[noreturn]] void Usage(std::string_view message, std::string_view command) {
  throw UsageError(std::string(message), Cat("ss ", command == "show" ? "project show" : command));
}

}  // namespace

ProjectLine ParseProjectLine(const std::vector<std::string>& args) {
  po::options_description desc;
  desc.add_options()                          //
      ("from", po::value<std::string>(), "")  //
      ("github", "")                          //
      ("private", "")                         //
      ("copy", "")                            //
      ("json", "")                            //
      ("no-size", "")                         //
      ("yes,y", "")                           //
      ("force", "")                           //
      ("help,h", "")                          //
      ("words", po::value<std::vector<std::string>>(), "");
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args)
                .options(desc)
                .positional(pos)
                .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                .run(),
            vm);

  ProjectLine o;
  std::vector<std::string> words;
  if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();
  std::string command = words.empty() ? "list" : words[0];
  if (vm.count("help")) {
    o.command = ProjectLine::Command::kHelp;
    return o;
  }
  if (command == "new") {
    o.command = ProjectLine::Command::kNew;
  } else if (command == "list") {
    o.command = ProjectLine::Command::kList;
  } else if (command == "show") {
    o.command = ProjectLine::Command::kShow;
  } else if (command == "delete") {
    o.command = ProjectLine::Command::kDelete;
  } else if (command == "path") {
    o.command = ProjectLine::Command::kPath;
  } else {
    throw Error(kExitUsage, Cat("unknown project command '", command, "'"), {},
                {"use new, list, show, delete or path; see 'ss project --help'"});
  }

  // Each flag belongs to some commands only.
  struct FlagUse {
    const char* flag;
    std::vector<ProjectLine::Command> commands;
  };
  using C = ProjectLine::Command;
  const FlagUse uses[] = {
      {"from", {C::kNew}},   {"github", {C::kNew}},          {"private", {C::kNew}},
      {"copy", {C::kNew}},   {"json", {C::kList, C::kShow}}, {"no-size", {C::kList}},
      {"yes", {C::kDelete}}, {"force", {C::kDelete}}};
  for (const auto& use : uses) {
    if (!vm.count(use.flag)) continue;
    if (std::find(use.commands.begin(), use.commands.end(), o.command) == use.commands.end()) {
      Usage(Cat("--", use.flag, " is not an option of '", command, "'"), command);
    }
  }
  if (vm.count("from")) o.from = vm["from"].as<std::string>();
  o.github = vm.count("github") > 0;
  o.is_private = vm.count("private") > 0;
  o.copy = vm.count("copy") > 0;
  o.json = vm.count("json") > 0;
  o.no_size = vm.count("no-size") > 0;
  o.yes = vm.count("yes") > 0;
  o.force = vm.count("force") > 0;

  if (o.command == C::kNew && o.from.empty() && vm.count("from")) {
    Usage("--from needs a PATH", command);
  }
  if (o.is_private && !o.github) Usage("--private needs --github", command);

  std::vector<std::string> rest(words.empty() ? words.end() : words.begin() + 1, words.end());
  const char* shape = o.command == C::kNew
                          ? "ss new NAME [--from PATH] [--github [--private]] [--copy]"
                      : o.command == C::kList ? "ss list [--json] [--no-size]"
                      : o.command == C::kShow ? "ss project show NAME [--json]"
                      : o.command == C::kPath ? "ss project path [NAME]"
                                              : "ss delete NAME [--yes] [--force]";
  if (o.command == C::kPath) {
    if (rest.size() > 1) Usage(Cat("usage: ", shape), command);
    if (!rest.empty()) o.name = rest[0];
    return o;
  }
  size_t want = o.command == C::kList ? 0 : 1;
  if (rest.size() != want) Usage(Cat("usage: ", shape), command);
  if (want == 1) o.name = rest[0];
  return o;
}

}  // namespace ss
