#include "vm_line.hpp"

namespace ss {

const CommandTable& VmCommands() {
  static const std::vector<std::string> lifecycle = {
      "start", "stop", "restart", "status", "reset", "delete", "clean", "provision", "setup"};
  static const CommandTable table({
      .prefix = "ss vm ",
      .help_command = "ss vm",
      .usage = "usage: ss vm COMMAND [OPTIONS]",
      .about = "Sandboxes: the machines the agent runs in.",
      .commands =
          {{.name = "start", .help = "start the sandbox (create it from the image the first time)"},
           {.name = "stop", .help = "stop it (gracefully, then forced after --timeout)"},
           {.name = "restart", .help = "stop it if it runs, then start it"},
           {.name = "status",
            .help = "show state, address, resources, snapshots and login (--json)"},
           {.name = "reset",
            .help = "replace it with a fresh one; projects are not touched (--yes)"},
           {.name = "delete", .help = "remove it; projects are not touched (--yes)"},
           {.name = "clean",
            .args = "--profile NAME",
            .help = "reset a profile's state: remove its sandbox, made afresh by the next session "
                    "(--yes); `ss clean --profile NAME`",
            .spelled = "ss clean"},
           {.name = "provision",
            .help = "copy the agent's configuration (agent.config) into ~/.claude again"},
           {.name = "list", .help = "list this install's sandboxes (--json)", .aliases = {"ls"}},
           {.name = "backends",
            .help = "what each backend needs here and what auto picks (--json)"},
           {.name = "image build",
            .help = "build the base image from Debian packages (--release, --mirror, --force)"},
           {.name = "image ls", .help = "list built images (--json)", .aliases = {"image list"}},
           {.name = "image rm",
            .args = "ID",
            .min_args = 1,
            .max_args = 1,
            .help = "remove a built image (--yes)"},
           {.name = "setup",
            .help = "prepare this host for a backend (--backend; --stop undoes it)"},
           {.name = "health-check",
            .args = "[NAME]",
            .max_args = 1,
            .help = "check the sandbox component by component (--json); `ss health-check`",
            .spelled = "ss health-check"},
           {.name = "doctor",
            .help = "check the host: virtualization, backends, disk, browser (--json)",
            .spelled = "ss doctor"}},
      .options =
          {{.name = "sandbox",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)"},
           {.name = "profile",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "the sandbox of profile NAME, with its settings (see ss profiles)"},
           {.name = "backend",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "backend for a new sandbox: auto, qemu, lxd, docker, podman",
            .commands = lifecycle},
           {.name = "fish",
            .help = "with start and reset: make fish the sandbox user's shell (default "
                    "sandboxes.NAME.shell, bash)",
            .commands = {"start", "reset"}},
           {.name = "deploy",
            .kind = OptionSpec::kText,
            .value = "DIR",
            .help = "with start and reset: share DIR read-write at /mnt/deploy in the new sandbox "
                    "(default sandboxes.NAME.deploy; reset keeps the old one)",
            .commands = {"start", "reset"}},
           {.name = "timeout",
            .kind = OptionSpec::kNumber,
            .value = "SECONDS",
            .help = "how long start waits for SSH (default 30; 300 for a VM without hardware "
                    "acceleration), stop waits before forcing (default 15)",
            .commands = {"start", "stop", "restart", "reset", "provision"}},
           {.name = "release",
            .kind = OptionSpec::kText,
            .value = "NAME",
            .help = "Debian release of the image (default bookworm)",
            .commands = {"image build"}},
           {.name = "mirror",
            .kind = OptionSpec::kText,
            .value = "URL",
            .help = "Debian mirror (default http://deb.debian.org/debian)",
            .commands = {"image build"}},
           {.name = "force",
            .help = "image build: rebuild even when up to date; reset, delete: go on although "
                    "working copies have changes not yet applied (saved to "
                    "~/super-sandbox/rescued/ first)",
            .commands = {"reset", "delete", "clean", "image build"}},
           {.name = "stop",
            .help = "with setup: stop the daemons setup started",
            .commands = {"setup"}},
           {.name = "json",
            .help = "print one JSON document (see ss-json(7))",
            .commands = {"status", "list", "backends", "image build", "image ls", "setup",
                         "health-check", "doctor"}},
           {.name = "yes",
            .letter = 'y',
            .help = "do not ask for confirmation",
            .commands = {"reset", "delete", "clean", "image rm"}}},
  });
  return table;
}

VmLine ParseVmLine(const std::vector<std::string>& args) {
  ParsedLine line = VmCommands().Parse(args);
  VmLine o;
  o.help = line.help;
  if (line.command) o.command = line.command->name;
  o.args = line.args;
  o.sandbox = line.Text("sandbox");
  o.profile = line.Text("profile");
  o.backend = line.Text("backend");
  o.deploy = line.Text("deploy");
  o.timeout = line.Seconds("timeout", -1);
  o.release = line.Text("release", o.release);
  o.mirror = line.Text("mirror", o.mirror);
  o.force = line.Flag("force");
  o.fish = line.Flag("fish");
  o.stop = line.Flag("stop");
  o.json = line.Flag("json");
  o.yes = line.Flag("yes");
  return o;
}

}  // namespace ss
