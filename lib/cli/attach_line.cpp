#include "attach_line.hpp"

#include <algorithm>

#include "error.hpp"
#include "ssh_command.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {

const std::vector<std::string>& AttachVerbs() {
  static const std::vector<std::string> verbs = {"run",    "shell",         "root",      "login",
                                                 "claude", "claude-run",    "exec",      "docker",
                                                 "logs",   "claude-resume", "ssh-config"};
  return verbs;
}

const char* const kAttachUsage = R"(usage: ss PROJECT [-t | -- CMD [ARGS...]] [OPTIONS]
       ss run [DIR] [-t | -- CMD [ARGS...]] [OPTIONS]     (ss . is ss run .)
       ss shell | root [-- CMD [ARGS...]] [OPTIONS]
       ss login [OPTIONS]
       ss claude [PROJECT] | claude-resume [PROJECT] [OPTIONS]
       ss claude-run [PROJECT] PROMPT [OPTIONS]
       ss exec [PROJECT] -- CMD [ARGS...]
       ss docker ARGS... | logs [ARGS...]
       ss ssh-config [SANDBOX]

Sessions in the sandbox. `ss PROJECT` starts the sandbox when it is stopped, then runs the agent
(agent.command, default: claude --dangerously-skip-permissions) in ~/projects/PROJECT.
`ss run DIR` does the same for any folder of the host: DIR is shared read-write at
/workspace/NAME with a sandbox of its own (made the first time, then remembered), so no other
folder or project is visible there. With --copy the folder is shared read-only and the agent
works at /workspace/NAME in a copy on the sandbox's disk; ss diff, ss apply and ss sync (in the
folder, or naming it) bring changes across, as for projects in working-copy mode.

Commands:
  run [DIR]             the agent in DIR (default: the current folder)
  shell [-- CMD]        bash as the sandbox user, in its home (or CMD there, no terminal)
  root [-- CMD]         a root shell (or CMD as root, no terminal)
  login                 the agent, interactively, to complete its browser login (/login)
  claude [PROJECT]      the agent in PROJECT (or the home directory)
  claude-run [PROJECT] PROMPT
                        one prompt, non-interactively (claude -p), PROMPT passed exactly
  claude-resume [PROJECT]
                        continue the last conversation
  exec [PROJECT] -- CMD run CMD in PROJECT (or the home), argv exact, no terminal
  docker ARGS...        docker inside the sandbox, ARGS exact
  logs [ARGS...]        docker logs of the sandbox's containers (all, or docker logs ARGS)
  ssh-config [SANDBOX]  an OpenSSH config block for ssh, scp, rsync, git and editors

Options:
  -t, --terminal, --shell
                        with PROJECT or run: a login shell there instead of the agent
  -tt                   with -- CMD: run CMD with a terminal
  --env NAME[=VALUE]    pass the host variable NAME (or VALUE) into the session (repeatable);
                        values never appear in a command line or on the sandbox's disk
  --secret NAME         pass the secret NAME too, read as config.yaml's secrets are (repeatable)
  --no-secret NAME      leave out a secret the sandbox or profile passes (repeatable)
  --profile NAME        run in the sandbox of profile NAME, with its settings (profiles.NAME in
                        config.yaml; see ss profiles)
  --sandbox NAME        the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)
  --mount HOST:GUEST[:ro]
                        share the host folder HOST at GUEST too (repeatable); folders are shared
                        when a sandbox is made, so with a sandbox that exists add --ephemeral
  --no-mount            share no host folder at all: not the projects, DIR or any mount
  --copy, --no-copy     with run: DIR in working-copy mode, or shared read-write (the default);
                        remembered, and chosen when its sandbox is made
  --ephemeral           remove the sandbox when the session ends (over the profile's setting)
  --keep                keep the sandbox when the session ends (over the profile's setting)
  --timeout SECONDS     how long to wait for a stopped sandbox to start (default 30; 300
                        for a VM without hardware acceleration)
  -h, --help            show this help
)";

AttachLine ParseAttachLine(const std::vector<std::string>& args) {
  AttachLine o;
  size_t i = 0;
  if (!args.empty() &&
      std::find(AttachVerbs().begin(), AttachVerbs().end(), args[0]) != AttachVerbs().end()) {
    o.verb = args[0];
    i = 1;
  }
  // docker and logs pass everything through untouched.
  bool passthrough = o.verb == "docker" || o.verb == "logs";
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      o.has_command = true;
      o.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (passthrough) {
      if (a == "--sandbox" && i + 1 < args.size() && o.words.empty()) {
        o.sandbox = args[++i];
        continue;
      }
      o.words.push_back(a);
      continue;
    }
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= args.size()) throw UsageError(Cat(flag, " needs a value"), "ss attach");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-t" || a == "--terminal" || a == "--shell") {
      if (o.terminal) o.force_tty = true;
      o.terminal = true;
    } else if (a == "-tt") {
      o.terminal = o.force_tty = true;
    } else if (a == "--env" || a.rfind("--env=", 0) == 0) {
      o.env.push_back(a == "--env" ? value("--env") : a.substr(6));
    } else if (a == "--secret" || a.rfind("--secret=", 0) == 0) {
      o.secrets.push_back(a == "--secret" ? value("--secret") : a.substr(9));
      CheckEnvName(o.secrets.back());
    } else if (a == "--no-secret" || a.rfind("--no-secret=", 0) == 0) {
      o.no_secrets.push_back(a == "--no-secret" ? value("--no-secret") : a.substr(12));
      CheckEnvName(o.no_secrets.back());
    } else if (a == "--mount" || a.rfind("--mount=", 0) == 0) {
      std::string spec = a == "--mount" ? value("--mount") : a.substr(8);
      std::string problem;
      auto m = ParseMountSpec(spec, &problem);
      if (!m) throw UsageError(Cat("--mount ", problem), "ss attach");
      o.mounts.push_back(*m);
    } else if (a == "--no-mount") {
      o.no_mount = true;
    } else if (a == "--copy" || a == "--no-copy") {
      if (o.verb != "run") {
        throw Error(kExitUsage, Cat(a, " goes with ss run DIR"), {},
                    {"a project's mode is its own: ss config set projects.NAME.mode copy"});
      }
      o.copy = a == "--copy";
    } else if (a == "--ephemeral" || a == "--keep") {
      if (o.ephemeral && *o.ephemeral != (a == "--ephemeral")) {
        throw Error(kExitUsage, "--ephemeral and --keep contradict each other");
      }
      o.ephemeral = a == "--ephemeral";
    } else if (a == "--profile" || a.rfind("--profile=", 0) == 0) {
      o.profile = a == "--profile" ? value("--profile") : a.substr(10);
    } else if (a == "--sandbox") {
      o.sandbox = value("--sandbox");
    } else if (a.rfind("--sandbox=", 0) == 0) {
      o.sandbox = a.substr(10);
    } else if (a == "--timeout") {
      std::string v = value("--timeout");
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(v) == 0) {
        throw Error(kExitUsage,
                    Cat("--timeout must be a positive number of seconds, not '", v, "'"));
      }
      o.timeout = std::stoi(v);
    } else if (a.size() > 1 && a[0] == '-' && o.verb != "claude-run") {
      throw UsageError(Cat("unknown option '", a, "'"), "ss attach");
    } else {
      o.words.push_back(a);
    }
  }
  if (o.no_mount && !o.mounts.empty()) {
    throw Error(kExitUsage, "--no-mount and --mount contradict each other", {},
                {"--no-mount shares no host folder at all"});
  }
  for (const auto& name : o.env) CheckEnvName(name.substr(0, name.find('=')));
  return o;
}

}  // namespace ss
