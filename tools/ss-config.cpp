// ss-config: show and change config.yaml ($SS_HOME/config.yaml). The file format, every key,
// range and default: ss-config(5).
#include <iomanip>
#include <iostream>

#include "config.hpp"
#include "config_edit.hpp"
#include "config_line.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "json_out.hpp"
#include "menu.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "prompt.hpp"
#include "sandbox.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {
namespace {

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

int Get(const Config& config, const ConfigLine& o) {
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

// `ss profiles`: each profile, what it runs on and whether its sandbox has been made.
int Profiles(const Config& config, bool json) {
  std::vector<std::string> made = KnownSandboxes();
  Json doc = JsonDocument("Profiles");
  doc["profiles"] = Json::array();
  for (const auto& name : config.ProfileNames()) {
    auto value = [&](const char* field) { return config.SandboxValue(name, field); };
    // Lists with no top-level default are null when the profile leaves them out.
    auto list = [&](const char* field) {
      Json v = value(field);
      return v.is_null() ? Json::array() : v;
    };
    Json p = {{"name", name},
              {"description", config.Get(Cat("profiles.", name, ".description"))},
              {"backend", value("backend")},
              {"ephemeral", value("ephemeral") == true},
              {"mounts", list("mounts")},
              {"env", list("env")},
              {"secrets", value("secrets")},
              {"network_mode", value("network.mode")},
              {"agent_command", value("agent.command")},
              {"sandbox_exists", std::count(made.begin(), made.end(), name) > 0}};
    doc["profiles"].push_back(std::move(p));
  }
  if (json) {
    PrintJson(doc);
    return 0;
  }
  if (doc["profiles"].empty()) {
    std::cout << "No profiles in " << DisplayPath(config.path()) << ".\n"
              << "Define one (see man 5 ss-config), such as:\n"
              << "  ss config set profiles.untrusted.description 'plugins I do not trust'\n"
              << "  ss config set profiles.untrusted.ephemeral true\n";
    return 0;
  }
  std::cout << std::left << std::setw(20) << "PROFILE" << std::setw(9) << "BACKEND" << std::setw(11)
            << "EPHEMERAL" << std::setw(10) << "SANDBOX"
            << "DESCRIPTION\n";
  for (const auto& p : doc["profiles"]) {
    std::string description =
        p["description"].is_string() ? p["description"].get<std::string>() : "";
    std::cout << std::setw(20) << p["name"].get<std::string>() << std::setw(9)
              << p["backend"].get<std::string>() << std::setw(11)
              << (p["ephemeral"].get<bool>() ? "yes" : "no") << std::setw(10)
              << (p["sandbox_exists"].get<bool>() ? "made" : "-") << description << "\n";
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
  std::string out;
  if (words.size() == 2 && (words[0] == "get" || words[0] == "set")) {
    Config config = Config::Load();
    for (const auto& key : ValidKeyNames()) {
      if (key.find("<name>") != std::string::npos) continue;
      const KeySpec* spec = FindKeySpec(key);
      std::cout << key << "\t" << (spec ? spec->description : "") << "\n";
    }
    auto fields = {"backend", "cpus",   "memory", "disk",          "ephemeral",   "shell",
                   "secrets", "mounts", "env",    "agent.command", "agent.config"};
    for (const auto& name : config.SandboxNames()) {
      for (const char* field : fields) std::cout << "sandboxes." << name << "." << field << "\n";
    }
    for (const auto& name : config.ProfileNames()) {
      std::cout << "profiles." << name << ".description\n";
      for (const char* field : fields) std::cout << "profiles." << name << "." << field << "\n";
    }
  } else if (words.size() == 3 && words[0] == "set") {
    const KeySpec* spec = FindKeySpec(words[1]);
    if (spec && spec->type == ValueType::kEnum) {
      for (const auto& c : spec->choices) std::cout << c << "\n";
    } else if (spec && spec->type == ValueType::kBool) {
      std::cout << "true\nfalse\n";
    }
    return 0;
  }
  ConfigCommands().Complete(words, out);
  std::cout << out;
  return 0;
}

// --- The Settings menu (bare `ss config` on a terminal) ---

std::string Tool(const std::string& name) { return ExecutableDir() + "/" + name; }

int RunInteractive(const std::vector<std::string>& argv) {
  ProcessOptions po;
  po.inherit_stdin = true;
  po.capture_stdout = po.capture_stderr = false;
  po.unlisted = true;  // ss's own binaries
  return ss::Run(argv, po).status;
}

SettingsView CurrentSettings(const Config& config) {
  std::string name = ResolveSandboxName("");
  Json cpus = config.SandboxValue(name, "cpus");
  Json memory = config.SandboxValue(name, "memory");
  Json disk = config.SandboxValue(name, "disk");
  SettingsView v;
  v.cpus = std::to_string(cpus.get<int64_t>());
  v.memory = FormatSizeHuman(memory.get<int64_t>());
  v.disk = FormatSizeHuman(disk.get<int64_t>());
  auto known = KnownSandboxes();
  if (std::find(known.begin(), known.end(), name) != known.end()) {
    try {
      Sandbox sandbox(name, config);
      SandboxStatus st = sandbox.backend().Status(name);
      if (st.disk_used >= 0) v.disk += Cat(" (", FormatSizeHuman(st.disk_used), " used)");
    } catch (const Error& e) {
      Debug(Cat("settings: disk used: ", e.what()));
    }
  }
  return v;
}

// [1]: asks for each resource; Enter keeps it. A bad value is explained and asked again.
bool AdjustResources(const Config& config) {
  std::string name = ResolveSandboxName("");
  for (const char* key : {"cpus", "memory", "disk"}) {
    const KeySpec* spec = FindKeySpec(key);
    std::string current = FormatValue(*spec, config.SandboxValue(name, key));
    std::string label =
        key == std::string("cpus") ? "CPUs" : Cat(char(std::toupper(key[0])), key + 1);
    while (true) {
      auto answer = ReadLine(Cat(label, " [", current, ", ", DescribeRange(*spec), "]: "));
      if (!answer) return false;
      std::string text(Trim(*answer));
      if (text.empty()) break;
      try {
        auto [canonical, value] = SetConfigValue(ConfigPath(), key, text);
        std::cout << SetMessage(*spec, canonical, value) << "\n";
        break;
      } catch (const Error& e) {
        PrintError(e);
      }
    }
  }
  return true;
}

// [3]: deletes this install's sandboxes and everything in $SS_HOME, after a [y/N] and a typed
// confirmation.
int FactoryReset() {
  std::string home = SsHome();
  Note(Cat("Factory reset deletes every sandbox of this install, every project in ",
           DisplayPath(ProjectsDir()), "/ and all settings (", DisplayPath(home), ")."));
  if (!Confirm("Continue? [y/N]: ", false)) {
    std::cout << "Cancelled.\n";
    return 1;
  }
  auto typed = ReadLine("Type 'delete everything' to confirm: ");
  if (!typed || Trim(*typed) != "delete everything") {
    std::cout << "Cancelled: nothing was deleted.\n";
    return 1;
  }
  for (const auto& name : KnownSandboxes()) {
    Note(Cat("Deleting sandbox ", name, "..."));
    int rc = RunInteractive({Tool("ss-vm"), "delete", "--yes", "--sandbox", name});
    if (rc != 0) {
      throw Error(kExitUnavailable, Cat("could not delete sandbox '", name, "'"), {},
                  {"nothing else was deleted; fix that and run the factory reset again"});
    }
  }
  RemoveTree(home);
  std::cout << "Factory reset done: deleted " << DisplayPath(home) << ".\n";
  return 0;
}

int SettingsMenuLoop() {
  if (!StdinIsTty() || !StdoutIsTty()) {
    std::cerr << ConfigCommands().Help();
    return kExitUsage;
  }
  while (true) {
    Config config = Config::Load();
    std::cout << "\n" << SettingsMenu(CurrentSettings(config)) << "\n";
    bool redraw = false;
    while (!redraw) {
      auto answer = ReadLine(kSettingsPrompt);
      if (!answer) return 0;
      MenuChoice c = ParseMenuChoice(*answer, 3, "b");
      if (c.letter == 'b') return 0;
      if (c.number == 1) {
        if (!AdjustResources(config)) return 0;
        redraw = true;
      } else if (c.number == 2) {
        RunInteractive({Tool("ss-vm"), "reset"});
        redraw = true;
      } else if (c.number == 3) {
        if (FactoryReset() == 0) return 0;
        redraw = true;
      } else {
        Note(Cat("Invalid choice '", Trim(*answer), "'. Enter 1, 2, 3 or b."));
      }
    }
  }
}

int RunOptions(const ConfigLine& o) {
  if (o.action == "help") {
    std::cout << ConfigCommands().Help();
    return 0;
  }
  if (o.action == "menu") return SettingsMenuLoop();
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
  if (o.action == "profiles") return Profiles(config, o.json);
  return Show(config, o.json);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-config", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::RunOptions(ss::ParseConfigLine(args));
  });
}
