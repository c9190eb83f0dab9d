#include "config_line.hpp"

namespace ss {

const CommandTable& ConfigCommands() {
  static const CommandTable table({
      .prefix = "ss config ",
      .help_command = "ss config",
      .usage = "usage: ss config              (the Settings menu, on a terminal)\n"
               "       ss config show [--json]\n"
               "       ss config get KEY [--json]\n"
               "       ss config set KEY VALUE\n"
               "       ss config path\n"
               "       ss profiles [--json]         (ss config profiles)",
      .about = "Show or change settings in config.yaml ($SS_HOME/config.yaml, default "
               "~/super-sandbox).\nKEY is a dotted path such as vm.memory or "
               "sandboxes.work.backend; cpus, memory and disk are\nshort for vm.cpus, vm.memory "
               "and vm.disk. Every key, its range and default: man 5 ss-config.\n`ss profiles` "
               "lists the profiles (profiles.NAME): the settings of the sandbox a session runs "
               "in\nwith --profile NAME.",
      .commands = {{.name = "show", .help = "every setting, with the defaults filled in (--json)"},
                   {.name = "get",
                    .args = "KEY",
                    .min_args = 1,
                    .max_args = 1,
                    .help = "one setting's value (--json)"},
                   {.name = "set",
                    .args = "KEY VALUE",
                    .min_args = 2,
                    .max_args = 2,
                    .help = "change one setting in config.yaml, its comments kept; checked first"},
                   {.name = "path", .help = "where config.yaml is"},
                   {.name = "profiles",
                    .help = "the profiles and what each changes (--json); `ss profiles`",
                    .spelled = "ss profiles"}},
      .options = {{.name = "json",
                   .help = "print one JSON document (see ss-json(7))",
                   .commands = {"show", "get", "profiles"}}},
  });
  return table;
}

ConfigLine ParseConfigLine(const std::vector<std::string>& args) {
  // `set KEY VALUE`: a VALUE that starts with '-' is a value, not an option.
  std::vector<std::string> line_args = args;
  std::vector<size_t> words;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].empty() || args[i][0] != '-') words.push_back(i);
    if (words.size() == 2 && args[words[0]] == "set" && i == words[1] && i + 1 < args.size() &&
        args[i + 1].size() > 1 && args[i + 1][0] == '-' && args[i + 1] != "--json" &&
        args[i + 1] != "--help" && args[i + 1] != "-h" && args[i + 1] != "--") {
      line_args.insert(line_args.begin() + static_cast<std::ptrdiff_t>(i + 1), "--");
      break;
    }
  }
  ParsedLine line = ConfigCommands().Parse(line_args);
  ConfigLine o;
  o.json = line.Flag("json");
  if (line.help) {
    o.action = "help";
  } else if (!line.command) {
    o.action = o.json ? "show" : "menu";
  } else {
    o.action = line.command->name;
    if (!line.args.empty()) o.key = line.args[0];
    if (line.args.size() > 1) o.value = line.args[1];
  }
  return o;
}

}  // namespace ss
