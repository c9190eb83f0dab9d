#include "config_line.hpp"

#include <boost/program_options.hpp>

#include "error.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {

const char* const kConfigUsage = R"(usage: ss config              (the Settings menu, on a terminal)
       ss config show [--json]
       ss config get KEY [--json]
       ss config set KEY VALUE
       ss config path
       ss profiles [--json]         (ss config profiles)

Show or change settings in config.yaml ($SS_HOME/config.yaml, default ~/super-sandbox).
KEY is a dotted path such as vm.memory or sandboxes.work.backend; cpus, memory and disk are
short for vm.cpus, vm.memory and vm.disk. Every key, its range and default: man 5 ss-config.
`ss profiles` lists the profiles (profiles.NAME): the settings of the sandbox a session runs in
with --profile NAME.

Options:
  --json      print one JSON document (see ss-json(7))
  -h, --help  show this help
)";

ConfigLine ParseConfigLine(const std::vector<std::string>& args) {
  po::options_description desc;
  desc.add_options()("json", "")("help,h", "")("words", po::value<std::vector<std::string>>(), "");
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  // The value of `set KEY VALUE` is taken as written, also when it starts with '-' ("-1GB").
  std::vector<std::string> words_first = args;
  std::vector<size_t> at;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].empty() || args[i][0] != '-') at.push_back(i);
    if (at.size() == 2 && args[at[0]] == "set" && i + 1 < args.size() && i == at[1] &&
        args[i + 1].size() > 1 && args[i + 1][0] == '-' && args[i + 1] != "--json" &&
        args[i + 1] != "--help" && args[i + 1] != "-h" && args[i + 1] != "--") {
      words_first.insert(words_first.begin() + static_cast<long>(i + 1), "--");
      break;
    }
  }
  po::store(po::command_line_parser(words_first).options(desc).positional(pos).run(), vm);
  ConfigLine o;
  o.json = vm.count("json") > 0;
  if (vm.count("help")) {
    o.action = "help";
    return o;
  }
  std::vector<std::string> words;
  if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();
  if (words.empty()) {
    if (!o.json) o.action = "menu";
    return o;
  }
  o.action = words[0];
  auto want = [&](size_t n, const char* shape) {
    if (words.size() != n) {
      throw UsageError(Cat("usage: ss config ", shape), "ss config");
    }
  };
  if (o.action == "show") {
    want(1, "show [--json]");
  } else if (o.action == "get") {
    want(2, "get KEY");
    o.key = words[1];
  } else if (o.action == "set") {
    want(3, "set KEY VALUE");
    o.key = words[1];
    o.value = words[2];
  } else if (o.action == "path") {
    want(1, "path");
  } else if (o.action == "profiles") {
    want(1, "profiles [--json]");
  } else {
    throw Error(kExitUsage, Cat("unknown config command '", o.action, "'"), {},
                {"use show, get, set, path or profiles; see 'ss config --help'"});
  }
  return o;
}

}  // namespace ss
