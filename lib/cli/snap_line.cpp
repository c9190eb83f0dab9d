#include "snap_line.hpp"

namespace ss {

const CommandTable& SnapCommands() {
  static const CommandTable table({
      .prefix = "ss ",
      .help_command = "ss snap",
      .usage = "usage: ss-snap COMMAND [OPTIONS]",
      .about = "Snapshots of the sandbox's own disk. Projects shared from the host are never in "
               "a snapshot,\nand restoring one never touches them.",
      .commands =
          {{.name = "snapshot",
            .args = "[NAME]",
            .max_args = 1,
            .help = "take a snapshot (default name: snap-YYYYMMDD-HHMMSS, UTC)"},
           {.name = "snapshot delete",
            .args = "NAME",
            .min_args = 1,
            .max_args = 1,
            .help = "delete a snapshot (--yes)"},
           {.name = "list",
            .help = "list snapshots, oldest first (--json); `ss snapshots`",
            .aliases = {"ls"},
            .spelled = "ss snapshots"},
           {.name = "restore",
            .args = "NAME",
            .min_args = 1,
            .max_args = 1,
            .help = "restore a snapshot, restart the sandbox and wait until it answers (--yes)"}},
      .options = {{.name = "sandbox",
                   .kind = OptionSpec::kText,
                   .value = "NAME",
                   .help = "the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)"},
                  {.name = "timeout",
                   .kind = OptionSpec::kNumber,
                   .value = "SECONDS",
                   .help = "how long restore waits for SSH (default 60)",
                   .commands = {"restore"}},
                  {.name = "json",
                   .help = "print one JSON document (see ss-json(7))",
                   .commands = {"snapshot", "list"}},
                  {.name = "force",
                   .help = "restore although working copies have changes not yet applied (saved to "
                           "~/super-sandbox/rescued/ first)",
                   .commands = {"restore"}},
                  {.name = "yes",
                   .letter = 'y',
                   .help = "do not ask for confirmation",
                   .commands = {"snapshot delete", "restore"}}},
  });
  return table;
}

SnapLine ParseSnapLine(const std::vector<std::string>& args) {
  ParsedLine line = SnapCommands().Parse(args);
  SnapLine o;
  o.help = line.help;
  if (line.command) o.command = line.command->name;
  if (!line.args.empty()) o.name = line.args[0];
  o.sandbox = line.Text("sandbox");
  o.timeout = line.Seconds("timeout", 60);
  o.force = line.Flag("force");
  o.json = line.Flag("json");
  o.yes = line.Flag("yes");
  return o;
}

}  // namespace ss
