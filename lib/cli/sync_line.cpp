#include "sync_line.hpp"

namespace ss {

const CommandTable& SyncCommands() {
  static const CommandTable table({
      .prefix = "ss ",
      .help_command = "ss sync",
      .usage = "usage: ss-sync COMMAND [ARGS] [OPTIONS]",
      .about = "Working copies (projects.NAME.mode: copy, or a folder opened with ss run DIR "
               "--copy) and files\nin and out of the sandbox.",
      .commands =
          {{.name = "sync",
            .args = "[PROJECT]",
            .max_args = 1,
            .help = "refresh the working copy from the host project (rsync --delete, leaving out "
                    "sync.exclude); refuses to replace changes made in the copy unless --force, "
                    "which saves them first",
            .summary = "refresh the working copy from the host project"},
           {.name = "diff",
            .args = "[PROJECT]",
            .max_args = 1,
            .help = "what apply would bring: the copy's changes since the last sync, and "
                    "conflicts (changed on the host too), as a diff (--stat)",
            .summary = "what apply would bring, as a diff"},
           {.name = "apply",
            .args = "[PROJECT]",
            .max_args = 1,
            .help = "bring the copy's changes since the last sync to the host project (--yes); "
                    "what changed on the host too is a conflict, left there unless --ours, "
                    "--theirs or --merge",
            .summary = "bring the copy's changes to the host project"},
           {.name = "fetch",
            .args = "[PROJECT]",
            .max_args = 1,
            .help = "bring the commits made in the copy's own repository (or, for a shared "
                    "project, the sandbox's own repository of it) to the host's, as objects and "
                    "refs: each branch fast-forwarded when the host's has not moved, else left "
                    "in sandbox/BRANCH (also done when a session in the project ends)",
            .summary = "bring the sandbox's commits to the host repository"},
           {.name = "push",
            .args = "LOCAL REMOTE",
            .min_args = 2,
            .max_args = 2,
            .help = "copy a file or directory into the sandbox"},
           {.name = "pull",
            .args = "REMOTE LOCAL",
            .min_args = 2,
            .max_args = 2,
            .help = "copy a file or directory out of the sandbox"}},
      .notes = "PROJECT may be a folder in copy mode, named by a path (., ./app, /srv/app). It "
               "defaults to the\nproject, or such folder, of the current directory. Relative "
               "REMOTE paths are relative\nto the project's directory in the sandbox (--project, "
               "or the current directory's project),\nelse to the sandbox user's home.",
      .options = {{.name = "sandbox",
                   .kind = OptionSpec::kText,
                   .value = "NAME",
                   .help = "the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)"},
                  {.name = "project",
                   .kind = OptionSpec::kText,
                   .value = "NAME",
                   .help = "push, pull: the project relative paths start from"},
                  {.name = "force",
                   .help = "sync: replace changes made in the copy (saved first)",
                   .commands = {"sync"}},
                  {.name = "dry-run",
                   .letter = 'n',
                   .help = "sync: show what would change, change nothing",
                   .commands = {"sync"}},
                  {.name = "stat",
                   .help = "diff: a summary per file instead of the diff",
                   .commands = {"diff"}},
                  {.name = "timeout",
                   .kind = OptionSpec::kNumber,
                   .value = "SECONDS",
                   .help = "how long to wait for the sandbox to start (default 60)"},
                  {.name = "json",
                   .help = "sync, fetch: print one JSON document (see ss-json(7))",
                   .commands = {"sync", "fetch"}},
                  {.name = "yes",
                   .letter = 'y',
                   .help = "apply: do not ask for confirmation",
                   .commands = {"apply"}},
                  {.name = "allow-exec",
                   .help = "apply: bring files the host runs or obeys on its own too (hooks, "
                           "agent and editor settings, .envrc: see ss-sync(1))",
                   .commands = {"apply"}},
                  {.name = "ours",
                   .help = "apply: settle conflicts with the host's version",
                   .commands = {"apply"}},
                  {.name = "theirs",
                   .help = "apply: settle conflicts with the sandbox's version",
                   .commands = {"apply"}},
                  {.name = "merge",
                   .help =
                       "apply: merge conflicting text (git merge-file; conflict markers where both "
                       "changed the same lines)",
                   .commands = {"apply"}}},
  });
  return table;
}

SyncLine ParseSyncLine(const std::vector<std::string>& args) {
  ParsedLine line = SyncCommands().Parse(args);
  SyncLine o;
  o.help = line.help;
  if (line.command) o.command = line.command->name;
  o.args = line.args;
  o.sandbox = line.Text("sandbox");
  o.project = line.Text("project");
  o.force = line.Flag("force");
  o.dry_run = line.Flag("dry-run");
  o.stat = line.Flag("stat");
  o.timeout = line.Seconds("timeout", 60);
  o.json = line.Flag("json");
  o.yes = line.Flag("yes");
  o.allow_exec = line.Flag("allow-exec");
  o.ours = line.Flag("ours");
  o.theirs = line.Flag("theirs");
  o.merge = line.Flag("merge");
  return o;
}

}  // namespace ss
