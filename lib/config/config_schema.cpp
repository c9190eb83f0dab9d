#include "config_schema.hpp"

#include <algorithm>

#include "host.hpp"
#include "net_policy.hpp"
#include "net_presets.hpp"
#include "shares.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "suggest.hpp"

namespace ss {
namespace {

int64_t MinCpus() { return 2; }
int64_t MaxCpus() { return std::max<int64_t>(2, HostCpus()); }
int64_t MinMemory() { return 4 * kGiB; }
int64_t MaxMemory() {
  int64_t host = HostMemory() - 4 * kGiB;
  host -= host % kGiB;  // whole GB, so the bound reads well and "host RAM - 4GB" is accepted
  return std::max(MinMemory(), host);
}
int64_t MinDisk() { return 20 * kGiB; }
int64_t MaxDisk() { return 500 * kGiB; }
// Tasks (processes and threads) of a container sandbox: enough for systemd and sshd to start,
// at most the kernel's own ceiling of process ids.
int64_t MinProcesses() { return 256; }
int64_t MaxProcesses() { return 4194304; }
// Open files of each process of a container sandbox: at most the kernel's default nr_open.
int64_t MinOpenFiles() { return 1024; }
int64_t MaxOpenFiles() { return 1048576; }
// Tracked connections of a sandbox on the host (its share of the conntrack table).
int64_t MinConnections() { return 256; }
int64_t MaxConnections() { return 1048576; }
int64_t MinTransfer() { return kMiB; }
int64_t MaxTransfer() { return kTiB; }
int64_t MinPort() { return 1; }
int64_t MaxPort() { return 65535; }
int64_t MinVersion() { return 1; }
int64_t MaxVersion() { return 1; }

Json DefaultCpus() { return std::min<int64_t>(4, MaxCpus()); }
Json DefaultMemory() { return std::min<int64_t>(8 * kGiB, MaxMemory()); }
Json DefaultDisk() { return 100 * kGiB; }
// Far above what an agent's session runs (a build, a browser, docker inside: hundreds), far
// below what a fork bomb would take from the host.
Json DefaultProcesses() { return 4096; }
Json DefaultOpenFiles() { return 65536; }
// About 70 new connections a second, each tracked for the two minutes after it closes.
Json DefaultConnections() { return 8192; }
Json DefaultTrue() { return true; }
Json DefaultVersion() { return 1; }
Json DefaultBackend() { return "auto"; }
Json DefaultAgent() { return "claude --dangerously-skip-permissions"; }
Json DefaultExclude() { return Json::array({"node_modules", ".git", "dist", "build"}); }
Json DefaultEmptyList() { return Json::array(); }
Json DefaultNetMode() { return "allowlist"; }
Json DefaultNetPresets() { return Json::array({"agent", "packages", "github"}); }
Json DefaultCdpPort() { return 9222; }
Json DefaultTransfer() { return kGiB; }
Json DefaultShell() { return "bash"; }
Json DefaultMode() { return "mount"; }
Json DefaultAgentBrowser() { return "auto"; }
Json DefaultFeed() { return "https://supersandbox.dev/releases"; }

bool IsEnvName(std::string_view s) { return NameOf(s, "A-Za-z_", "A-Za-z0-9_", s.size()); }

const std::vector<std::string> kBackends = {"auto",   "qemu", "lxd", "docker",
                                            "podman", "lume", "lima"};

std::vector<KeySpec> BuildSchema() {
  std::vector<KeySpec> s;
  auto add = [&](KeySpec k) { s.push_back(std::move(k)); };
  add({.key = "version",
       .type = ValueType::kInt,
       .description = "config file format version",
       .min = MinVersion,
       .max = MaxVersion,
       .default_value = DefaultVersion});
  add({.key = "backend",
       .type = ValueType::kEnum,
       .description = "default sandbox backend",
       .choices = kBackends,
       .default_value = DefaultBackend});
  add({.key = "vm.cpus",
       .type = ValueType::kInt,
       .description = "CPUs given to a sandbox",
       .min = MinCpus,
       .max = MaxCpus,
       .range_note = "host cores",
       .default_value = DefaultCpus,
       .alias = "cpus"});
  add({.key = "vm.memory",
       .type = ValueType::kSize,
       .description = "memory given to a sandbox",
       .min = MinMemory,
       .max = MaxMemory,
       .range_note = "host RAM - 4GB",
       .default_value = DefaultMemory,
       .alias = "memory"});
  add({.key = "vm.disk",
       .type = ValueType::kSize,
       .description = "disk size of a sandbox",
       .min = MinDisk,
       .max = MaxDisk,
       .default_value = DefaultDisk,
       .alias = "disk"});
  add({.key = "vm.processes",
       .type = ValueType::kInt,
       .description = "processes and threads a container sandbox may run at once",
       .min = MinProcesses,
       .max = MaxProcesses,
       .default_value = DefaultProcesses});
  add({.key = "vm.open_files",
       .type = ValueType::kInt,
       .description = "open files of each process of a container sandbox",
       .min = MinOpenFiles,
       .max = MaxOpenFiles,
       .default_value = DefaultOpenFiles});
  add({.key = "updates.check",
       .type = ValueType::kBool,
       .description = "check for updates on launch",
       .default_value = DefaultTrue});
  add({.key = "updates.auto_apply",
       .type = ValueType::kBool,
       .description = "apply updates without asking",
       .default_value = DefaultTrue});
  add({.key = "updates.feed",
       .type = ValueType::kString,
       .description = "release feed URL",
       .default_value = DefaultFeed});
  add({.key = "agent.command",
       .type = ValueType::kString,
       .description = "command that starts the agent in the sandbox",
       .default_value = DefaultAgent});
  add({.key = "lxd.remote",
       .type = ValueType::kString,
       .description = "LXD remote that holds the sandboxes (empty: local)"});
  add({.key = "browser.cdp_port",
       .type = ValueType::kInt,
       .description = "host Chrome DevTools port",
       .min = MinPort,
       .max = MaxPort,
       .default_value = DefaultCdpPort});
  add({.key = "sync.exclude",
       .type = ValueType::kStringList,
       .description = "paths ss sync never copies",
       .default_value = DefaultExclude});
  add({.key = "sync.max_size",
       .type = ValueType::kSize,
       .description = "the most a sandbox may send the host at once (ss diff, apply, pull)",
       .min = MinTransfer,
       .max = MaxTransfer,
       .default_value = DefaultTransfer});
  add({.key = "review.flag",
       .type = ValueType::kStringList,
       .description = "more files ss diff marks and ss apply brings only with --allow-exec",
       .default_value = DefaultEmptyList});
  add({.key = "projects.*.mode",
       .type = ValueType::kEnum,
       .description =
           "mount: the agent works in the shared folder; copy: in a working copy kept by ss sync",
       .choices = {"mount", "copy"},
       .default_value = DefaultMode});
  add({.key = "secrets",
       .type = ValueType::kStringList,
       .description =
           "host variables passed into sessions (or a map: NAME: {inject: [hosts], from: ...}, see "
           "ss-config(5))",
       .default_value = DefaultEmptyList});
  // The egress policy (net_store.hpp): top level for every sandbox, sandboxes.NAME.network for
  // one (each key falls back to the top level's).
  auto add_network = [&](const std::string& prefix) {
    bool top = prefix == "network";
    std::string whose = top ? "sandboxes'" : "this sandbox's";
    add({.key = prefix + ".mode",
         .type = ValueType::kEnum,
         .description = Cat(whose, " network: allowlist (the presets and allow rules), open, none"),
         .choices = {"allowlist", "open", "none"},
         .default_value = top ? DefaultNetMode : nullptr});
    add({.key = prefix + ".presets",
         .type = ValueType::kStringList,
         .description =
             Cat("rule sets ", whose, " allowlist starts from (agent, packages, github)"),
         .default_value = top ? DefaultNetPresets : nullptr});
    add({.key = prefix + ".allow",
         .type = ValueType::kStringList,
         .description =
             Cat("more destinations ", whose, " network may reach (name, *.name, name:port, CIDR)"),
         .default_value = top ? DefaultEmptyList : nullptr});
    add({.key = prefix + ".deny",
         .type = ValueType::kStringList,
         .description = Cat("destinations ", whose, " network never reaches, whatever allows them"),
         .default_value = top ? DefaultEmptyList : nullptr});
    add({.key = prefix + ".connections",
         .type = ValueType::kInt,
         .description = Cat("connections ", whose,
                            " network may hold open on the host (tracked ones, and ss-net's)"),
         .min = MinConnections,
         .max = MaxConnections,
         .default_value = top ? DefaultConnections : nullptr});
  };
  add_network("network");
  add({.key = "agent.config",
       .type = ValueType::kString,
       .description =
           "host folder whose files are copied into the sandbox's ~/.claude (never mounted)"});
  add({.key = "agent.browser",
       .type = ValueType::kEnum,
       .description = "auto: start the agent with --chrome when Claude in Chrome is the browser "
                      "path; off: never",
       .choices = {"auto", "off"},
       .default_value = DefaultAgentBrowser});
  add({.key = "image.packages",
       .type = ValueType::kStringList,
       .description = "Debian packages of your own added to the next image build",
       .default_value = DefaultEmptyList});
  add({.key = "image.npm",
       .type = ValueType::kStringList,
       .description = "npm packages of your own installed globally by the next image build",
       .default_value = DefaultEmptyList});
  // One sandbox's settings (sandboxes.NAME) and a profile's (profiles.NAME, the settings of the
  // sandbox `--profile NAME` runs in): the same keys, each falling back to the top level's.
  auto add_sandbox = [&](const std::string& prefix, const std::string& whose) {
    add({.key = prefix + ".backend",
         .type = ValueType::kEnum,
         .description = Cat("backend of ", whose),
         .choices = kBackends});
    add({.key = prefix + ".cpus",
         .type = ValueType::kInt,
         .description = Cat("CPUs of ", whose),
         .min = MinCpus,
         .max = MaxCpus,
         .range_note = "host cores"});
    add({.key = prefix + ".memory",
         .type = ValueType::kSize,
         .description = Cat("memory of ", whose),
         .min = MinMemory,
         .max = MaxMemory,
         .range_note = "host RAM - 4GB"});
    add({.key = prefix + ".disk",
         .type = ValueType::kSize,
         .description = Cat("disk size of ", whose),
         .min = MinDisk,
         .max = MaxDisk});
    add({.key = prefix + ".processes",
         .type = ValueType::kInt,
         .description = Cat("processes and threads of ", whose, " (a container)"),
         .min = MinProcesses,
         .max = MaxProcesses});
    add({.key = prefix + ".open_files",
         .type = ValueType::kInt,
         .description = Cat("open files of each process of ", whose, " (a container)"),
         .min = MinOpenFiles,
         .max = MaxOpenFiles});
    add({.key = prefix + ".ephemeral",
         .type = ValueType::kBool,
         .description = "remove the sandbox when the session ends"});
    add({.key = prefix + ".shell",
         .type = ValueType::kEnum,
         .description = "login shell of the sandbox user",
         .choices = {"bash", "fish"},
         .default_value = DefaultShell});
    add({.key = prefix + ".deploy",
         .type = ValueType::kString,
         .description =
             "host folder shared read-write at /mnt/deploy, set when the sandbox is created"});
    add({.key = prefix + ".mounts",
         .type = ValueType::kStringList,
         .description =
             "more host folders shared when the sandbox is created: HOST:GUEST or HOST:GUEST:ro"});
    add({.key = prefix + ".env",
         .type = ValueType::kStringList,
         .description = "variables of every session: NAME (the host's value) or NAME=VALUE"});
    add({.key = prefix + ".secrets",
         .type = ValueType::kStringList,
         .description = Cat("host variables passed into ", whose, " (or a map, as secrets)")});
    add({.key = prefix + ".agent.command",
         .type = ValueType::kString,
         .description = Cat("command that starts the agent in ", whose)});
    add({.key = prefix + ".agent.config",
         .type = ValueType::kString,
         .description = Cat("host folder copied into the ~/.claude of ", whose)});
    add_network(prefix + ".network");
  };
  add_sandbox("sandboxes.*", "this sandbox");
  add({.key = "profiles.*.description",
       .type = ValueType::kString,
       .description = "what the profile is for (ss profiles)"});
  add_sandbox("profiles.*", "this profile's sandbox");
  return s;
}

}  // namespace

bool IsSecretsKey(std::string_view key) {
  return key == "secrets" || key == "sandboxes.*.secrets" || key == "profiles.*.secrets";
}

bool MatchPattern(std::string_view pattern, std::string_view key, bool* bad_name) {
  auto p = Split(pattern, '.');
  auto k = Split(key, '.');
  if (p.size() != k.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == "*") {
      if (!IsSandboxName(k[i])) *bad_name = true;
      continue;
    }
    if (p[i] != k[i]) return false;
  }
  return true;
}

// Prefixes that are sections (maps) in the schema: "vm", "sandboxes", "sandboxes.*".
bool IsSection(std::string_view path, bool* bad) {
  for (const auto& spec : ConfigSchema()) {
    auto parts = Split(spec.key, '.');
    auto want = Split(path, '.');
    if (want.size() >= parts.size()) continue;
    std::string prefix;
    for (size_t i = 0; i < want.size(); ++i) prefix += (i ? "." : "") + parts[i];
    if (MatchPattern(prefix, path, bad)) return true;
  }
  return false;
}

std::optional<bool> ParseBool(std::string_view text) {
  std::string t = ToLower(text);
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

std::optional<int64_t> ParseInt(std::string_view text) {
  std::string t(text);
  std::string_view digits = t;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) digits.remove_prefix(1);
  if (digits.empty() || digits.size() > 15 || !OnlyChars(digits, "0-9")) return std::nullopt;
  return std::stoll(t);
}

std::string TypeWord(const KeySpec& spec) {
  switch (spec.type) {
    case ValueType::kInt:
      return "a whole number";
    case ValueType::kSize:
      return "a size such as 8GB, 512MB or 1TB";
    case ValueType::kBool:
      return "true or false";
    case ValueType::kString:
      return "a string";
    case ValueType::kEnum:
      return Cat("one of: ", Join(spec.choices, ", "));
    case ValueType::kStringList:
      return "a list of strings";
  }
  return "a value";
}

// A YAML scalar converted to the key's type, or the problem.
Json ConvertScalar(const KeySpec& spec, const std::string& text, bool quoted,
                   std::string* problem) {
  switch (spec.type) {
    case ValueType::kInt:
      if (auto v = quoted ? std::nullopt : ParseInt(text)) return *v;
      break;
    case ValueType::kSize:
      if (auto v = ParseSize(text)) return *v;
      break;
    case ValueType::kBool:
      if (auto v = quoted ? std::nullopt : ParseBool(text)) return *v;
      break;
    case ValueType::kString:
      return text;
    case ValueType::kEnum:
      if (std::find(spec.choices.begin(), spec.choices.end(), text) != spec.choices.end()) {
        return text;
      }
      *problem = Cat("'", text, "' is not valid; use one of: ", Join(spec.choices, ", "));
      return nullptr;
    case ValueType::kStringList:
      break;
  }
  *problem = Cat("'", text, "' is not ", TypeWord(spec));
  return nullptr;
}

const std::vector<KeySpec>& ConfigSchema() {
  static const std::vector<KeySpec> schema = BuildSchema();
  return schema;
}

const KeySpec* FindKeySpec(std::string_view key, std::string* canonical) {
  std::string k(key);
  for (const auto& spec : ConfigSchema()) {
    if (!spec.alias.empty() && spec.alias == k) {
      if (canonical) *canonical = spec.key;
      return &spec;
    }
  }
  for (const auto& spec : ConfigSchema()) {
    bool bad = false;
    if (MatchPattern(spec.key, k, &bad) && !bad) {
      if (canonical) *canonical = k;
      return &spec;
    }
  }
  return nullptr;
}

std::vector<std::string> ValidKeyNames() {
  std::vector<std::string> names;
  for (const auto& spec : ConfigSchema()) {
    if (!spec.alias.empty()) names.push_back(spec.alias);
  }
  for (const auto& spec : ConfigSchema()) {
    std::string k = spec.key;
    auto star = k.find('*');
    if (star != std::string::npos) k.replace(star, 1, "<name>");
    names.push_back(k);
  }
  return names;
}

Error UnknownKeyError(std::string_view key) {
  std::vector<std::string> details = {"", Cat("Valid keys: ", Join(ValidKeyNames(), ", "))};
  if (auto guess = Suggest(key, ValidKeyNames()))
    details.push_back(Cat("Did you mean '", *guess, "'?"));
  return Error(kExitUsage, Cat("unknown config key: ", key), details);
}

std::string DescribeRange(const KeySpec& spec) {
  if (spec.type == ValueType::kEnum) return Join(spec.choices, ", ");
  if (!spec.min || !spec.max) return TypeWord(spec);
  auto fmt = [&](int64_t v) {
    return spec.type == ValueType::kSize ? FormatSizeConfig(v) : std::to_string(v);
  };
  std::string note = spec.range_note.empty() ? "" : Cat(" (max: ", spec.range_note, ")");
  return Cat(fmt(spec.min()), " .. ", fmt(spec.max()), note);
}

std::optional<std::string> CheckValue(const KeySpec& spec, const Json& value,
                                      std::string_view as_written) {
  if ((spec.type == ValueType::kInt || spec.type == ValueType::kSize) && spec.min && spec.max) {
    int64_t v = value.get<int64_t>();
    if (v < spec.min() || v > spec.max()) {
      std::string shown = !as_written.empty()             ? std::string(as_written)
                          : spec.type == ValueType::kSize ? FormatSizeConfig(v)
                                                          : std::to_string(v);
      return Cat(shown, " is out of range; valid: ", DescribeRange(spec));
    }
  }
  if (spec.type == ValueType::kStringList) {
    bool names = IsSecretsKey(spec.key);
    bool mounts = spec.key.ends_with(".mounts");
    bool env = spec.key.ends_with("*.env");
    bool debs = spec.key == "image.packages";
    bool npm = spec.key == "image.npm";
    bool rules = spec.key.ends_with("network.allow") || spec.key.ends_with("network.deny");
    bool presets = spec.key.ends_with("network.presets");
    for (const auto& item : value) {
      const std::string& s = item.get_ref<const std::string&>();
      if (s.empty()) return std::string("list items must not be empty");
      if (rules) {
        try {
          ParseNetRule(s);
        } catch (const Error& e) {
          return std::string(e.what());
        }
      }
      if (presets && !NetPresetRules(s, {})) {
        return Cat(Quoted(s), " is not a preset; presets: ", Join(NetPresetNames(), ", "));
      }
      if (debs && !NameOf(s, "a-z0-9", "a-z0-9+.-", 100)) {
        return Cat(Quoted(s),
                   " is not a Debian package name (lowercase letters, digits, "
                   "'+', '-' and '.')");
      }
      if (npm && !NameOf(s, "a-zA-Z0-9@/._~^<>=*|+", "a-zA-Z0-9@/._~^<>=*|+-", s.size())) {
        return Cat(Quoted(s), " is not an npm package (name, @scope/name, name@version)");
      }
      if (mounts) {
        std::string problem;
        if (!ParseMountSpec(s, &problem)) return problem;
      }
      if (env && !IsEnvName(s.substr(0, s.find('=')))) {
        return Cat(Quoted(s),
                   " is not NAME or NAME=VALUE (NAME: letters, digits and '_', "
                   "not starting with a digit)");
      }
      if (names && !IsEnvName(s)) {
        return Cat(Quoted(s),
                   " is not an environment variable name (letters, digits and '_', "
                   "not starting with a digit)");
      }
    }
  }
  return std::nullopt;
}

Json ParseValueText(const KeySpec& spec, std::string_view key, std::string_view text) {
  Json value;
  if (spec.type == ValueType::kStringList) {
    value = Json::array();
    if (!Trim(text).empty()) {
      for (const auto& item : Split(text, ',')) value.push_back(std::string(Trim(item)));
    }
  } else {
    std::string problem;
    value = ConvertScalar(spec, std::string(Trim(text)), false, &problem);
    if (value.is_null()) {
      std::vector<std::string> hints;
      if (spec.type == ValueType::kSize)
        hints.push_back("write a whole number followed by MB, GB or TB, e.g. 16GB");
      throw Error(kExitDataErr, Cat("invalid value for ", key, ": ", problem), {}, hints);
    }
  }
  if (auto bad = CheckValue(spec, value, spec.type == ValueType::kStringList ? "" : Trim(text))) {
    throw Error(kExitDataErr, Cat("invalid value for ", key, ": ", *bad));
  }
  return value;
}

std::string FormatValue(const KeySpec& spec, const Json& value) {
  if (value.is_null()) return "";
  switch (spec.type) {
    case ValueType::kSize:
      return FormatSizeConfig(value.get<int64_t>());
    case ValueType::kBool:
      return value.get<bool>() ? "true" : "false";
    case ValueType::kInt:
      return std::to_string(value.get<int64_t>());
    case ValueType::kStringList: {
      std::vector<std::string> items;
      for (const auto& item : value) items.push_back(item.get<std::string>());
      return Join(items, ", ");
    }
    default:
      return value.get<std::string>();
  }
}

}  // namespace ss
