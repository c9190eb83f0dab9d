// ss-config: show and change config.yaml ($SS_HOME/config.yaml). The file format, every key,
// range and default: ss-config(5).
#include <boost/program_options.hpp>
#include <iomanip>
#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {
namespace {

constexpr const char* kUsage = R"(usage: ss config [show] [--json]
       ss config get KEY [--json]
       ss config set KEY VALUE
       ss config path

Show or change settings in config.yaml ($SS_HOME/config.yaml, default ~/super-sandbox).
KEY is a dotted path such as vm.memory or sandboxes.work.backend; cpus, memory and disk are
short for vm.cpus, vm.memory and vm.disk. Every key, its range and default: man 5 ss-config.

Options:
  --json      print one JSON document (see ss-json(7))
  -h, --help  show this help
)";

struct Options {
  std::string action = "show";  // show | get | set | path | help
  std::string key;
  std::string value;
  bool json = false;
};

Options ParseArgs(const Args& args) {
  po::options_description desc;
  desc.add_options()("json", "")("help,h", "")("words", po::value<std::vector<std::string>>(), "");
  po::positional_options_description pos;
  pos.add("words", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  Options o;
  o.json = vm.count("json") > 0;
  if (vm.count("help")) {
    o.action = "help";
    return o;
  }
  std::vector<std::string> words;
  if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();
  if (words.empty()) return o;
  o.action = words[0];
  auto want = [&](size_t n, const char* shape) {
    if (words.size() != n) {
      throw Error(kExitUsage, Cat("usage: ss config ", shape), {}, {"see 'ss config --help'"});
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
  } else {
    throw Error(kExitUsage, Cat("unknown config command '", o.action, "'"), {},
                {"use show, get, set or path; see 'ss config --help'"});
  }
  return o;
}

const KeySpec& RequireKey(const std::string& key, std::string* canonical) {
  const KeySpec* spec = FindKeySpec(key, canonical);
  if (!spec) throw UnknownKeyError(key);
  return *spec;
}

int Show(const Config& config, bool json) {
  auto entries = config.Entries(true);
  if (json) {
    Json doc = JsonDocument("Config");
    doc["path"] = config.path();
    doc["file_exists"] = config.file_exists();
    doc["settings"] = Json::array();
    for (const auto& [key, value] : entries) {
      doc["settings"].push_back({{"key", key}, {"value", value}, {"set", config.IsSet(key)}});
    }
    PrintJson(doc);
    return 0;
  }
  bool tty = StdoutIsTty();
  if (tty) {
    std::cout << "Settings from " << DisplayPath(config.path())
              << (config.file_exists() ? "" : " (not created yet: all defaults)") << "\n\n";
  }
  for (const auto& [key, value] : entries) {
    const KeySpec* spec = FindKeySpec(key);
    std::string text = FormatValue(*spec, value);
    if (tty) {
      std::cout << "  " << std::left << std::setw(24) << key << " " << std::setw(40) << text
                << (config.IsSet(key) ? "" : " (default)") << "\n";
    } else {
      std::cout << key << "\t" << text << "\n";
    }
  }
  return 0;
}

int Get(const Config& config, const Options& o) {
  std::string canonical;
  const KeySpec& spec = RequireKey(o.key, &canonical);
  Json value;
  auto parts = Split(canonical, '.');
  if (parts.size() == 3 && parts[0] == "sandboxes") {
    value = config.SandboxValue(parts[1], parts[2]);
  } else {
    value = config.Get(canonical);
  }
  if (o.json) {
    Json doc = JsonDocument("ConfigValue");
    doc["key"] = canonical;
    doc["value"] = value;
    doc["set"] = config.IsSet(canonical);
    PrintJson(doc);
    return 0;
  }
  if (value.is_null()) return kExitFailure;  // not set and no default, like `git config`
  if (spec.type == ValueType::kStringList) {
    for (const auto& item : value) std::cout << item.get<std::string>() << "\n";
  } else {
    std::cout << FormatValue(spec, value) << "\n";
  }
  return 0;
}

std::string SetMessage(const KeySpec& spec, const std::string& key, const Json& value) {
  if (key == "vm.memory")
    return Cat("Memory set to ", FormatSizeHuman(value.get<int64_t>()), ". Restart VM to apply.");
  if (key == "vm.cpus") return Cat("CPUs set to ", value.get<int64_t>(), ". Restart VM to apply.");
  if (key == "vm.disk")
    return Cat("Disk set to ", FormatSizeHuman(value.get<int64_t>()), ". Restart VM to apply.");
  std::string shown = spec.type == ValueType::kSize ? FormatSizeHuman(value.get<int64_t>())
                                                    : FormatValue(spec, value);
  auto parts = Split(key, '.');
  if (parts.size() == 3 && parts[0] == "sandboxes" &&
      (parts[2] == "cpus" || parts[2] == "memory" || parts[2] == "disk")) {
    return Cat(key, " set to ", shown, ". Restart sandbox '", parts[1], "' to apply.");
  }
  return Cat(key, " set to ", shown.empty() ? "''" : shown, ".");
}

// Completion candidates for the last of `words` (after "ss config").
int Complete(const Args& words) {
  if (words.size() <= 1) {
    for (const char* w : {"show", "get", "set", "path", "--json", "--help"}) std::cout << w << "\n";
  } else if (words.size() == 2 && (words[0] == "get" || words[0] == "set")) {
    Config config = Config::Load();
    for (const auto& key : ValidKeyNames()) {
      if (key.find("<name>") == std::string::npos) std::cout << key << "\n";
    }
    for (const auto& name : config.SandboxNames()) {
      for (const char* field :
           {"backend", "cpus", "memory", "disk", "ephemeral", "shell", "secrets"}) {
        std::cout << "sandboxes." << name << "." << field << "\n";
      }
    }
  } else if (words.size() == 3 && words[0] == "set") {
    const KeySpec* spec = FindKeySpec(words[1]);
    if (spec && spec->type == ValueType::kEnum) {
      for (const auto& c : spec->choices) std::cout << c << "\n";
    } else if (spec && spec->type == ValueType::kBool) {
      std::cout << "true\nfalse\n";
    }
  }
  return 0;
}

int Run(const Options& o) {
  if (o.action == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (o.action == "path") {
    std::cout << ConfigPath() << "\n";
    return 0;
  }
  if (o.action == "set") {
    std::string canonical;
    const KeySpec& spec = RequireKey(o.key, &canonical);
    auto [key, value] = SetConfigValue(ConfigPath(), o.key, o.value);
    std::cout << SetMessage(spec, key, value) << "\n";
    return 0;
  }
  Config config = Config::Load();
  if (o.action == "get") return Get(config, o);
  return Show(config, o.json);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-config", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseArgs(args));
  });
}
