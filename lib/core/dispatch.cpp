#include "dispatch.hpp"

#include <set>

namespace ss {

const std::vector<Verb>& Verbs() {
  static const std::vector<Verb> verbs = {
      {"new", "ss-project", {"new"}, "create a project", "ss-project"},
      {"list", "ss-project", {"list"}, "list projects", "ss-project"},
      {"delete", "ss-project", {"delete"}, "delete a project", "ss-project"},
      {"project", "ss-project", {}, "project commands (new, list, show, delete)", "ss-project"},
      {"status", "ss-vm", {"status"}, "show the sandbox's state and resources", "ss-vm"},
      {"start", "ss-vm", {"start"}, "start the sandbox", "ss-vm"},
      {"stop", "ss-vm", {"stop"}, "stop the sandbox", "ss-vm"},
      {"restart", "ss-vm", {"restart"}, "stop and start the sandbox", "ss-vm"},
      {"reset", "ss-vm", {"reset"}, "reset the sandbox to a fresh state", "ss-vm"},
      {"destroy", "ss-vm", {"delete"}, "delete the sandbox (asks first; --yes)", "ss-vm"},
      {"vm", "ss-vm", {}, "sandbox commands (image, setup, start, stop, ...)", "ss-vm"},
      {"doctor", "ss-vm", {"doctor"}, "check the host: virtualization, backends, daemons", "ss-vm"},
      {"health-check",
       "ss-vm",
       {"health-check"},
       "check a sandbox component by component",
       "ss-vm"},
      {"config", "ss-config", {}, "show or change settings", "ss-config", "5"},
      {"profiles", "ss-config", {"profiles"}, "list the profiles of config.yaml", "ss-config", "5"},
      {"clean",
       "ss-vm",
       {"clean"},
       "reset a profile's sandbox (--profile NAME; asks first)",
       "ss-vm"},
      {"attach", "ss-attach", {}, "open a project in its sandbox", "ss-attach"},
      {"run", "ss-attach", {"run"}, "open the agent on any folder (ss .)", "ss-attach"},
      {"shell", "ss-attach", {"shell"}, "bash in the sandbox as the sandbox user", "ss-attach"},
      {"root", "ss-attach", {"root"}, "root shell in the sandbox", "ss-attach"},
      {"login", "ss-attach", {"login"}, "log the agent in", "ss-attach"},
      {"claude", "ss-attach", {"claude"}, "start the agent in a project", "ss-attach"},
      {"claude-run", "ss-attach", {"claude-run"}, "run one prompt non-interactively", "ss-attach"},
      {"claude-resume",
       "ss-attach",
       {"claude-resume"},
       "continue the last conversation",
       "ss-attach"},
      {"exec", "ss-attach", {"exec"}, "run a command in the sandbox", "ss-attach"},
      {"docker", "ss-attach", {"docker"}, "run docker inside the sandbox", "ss-attach"},
      {"logs", "ss-attach", {"logs"}, "logs of the sandbox's containers", "ss-attach"},
      {"ssh-config", "ss-attach", {"ssh-config"}, "OpenSSH config for the sandbox", "ss-attach"},
      {"tunnel", "ss-tunnel", {}, "forward ports and sockets over SSH", "ss-tunnel"},
      {"snapshot", "ss-snap", {"snapshot"}, "take (or delete) a snapshot", "ss-snap"},
      {"snapshots", "ss-snap", {"list"}, "list snapshots", "ss-snap"},
      {"restore", "ss-snap", {"restore"}, "restore a snapshot", "ss-snap"},
      {"sync", "ss-sync", {"sync"}, "refresh the working copy from the source", "ss-sync"},
      {"diff", "ss-sync", {"diff"}, "show what changed in the working copy", "ss-sync"},
      {"apply", "ss-sync", {"apply"}, "copy working-copy changes back to the host", "ss-sync"},
      {"fetch", "ss-sync", {"fetch"}, "bring the working copy's commits to the host", "ss-sync"},
      {"push", "ss-sync", {"push"}, "copy files into the sandbox", "ss-sync"},
      {"pull", "ss-sync", {"pull"}, "copy files out of the sandbox", "ss-sync"},
      {"net", "ss-net", {}, "the sandbox's network: allow, deny, ls, log", "ss-net"},
      {"update", "ss-update", {}, "update ss to the latest release", "ss-update"},
  };
  return verbs;
}

const Verb* FindVerb(const std::string& name) {
  for (const auto& v : Verbs()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::vector<std::string> VerbNames() {
  std::vector<std::string> names;
  for (const auto& v : Verbs()) names.push_back(v.name);
  for (const char* extra : {"help", "commands", "init", "cd"}) names.emplace_back(extra);
  return names;
}

bool IsIproute2Word(const std::string& word) {
  static const std::set<std::string> words = {
      "state",  "exclude", "excl",      "dst", "src", "dport", "sport", "dev",
      "fwmark", "cgroup",  "autobound", "not", "and", "or",    "(",     "!"};
  return words.count(word) > 0;
}

}  // namespace ss
