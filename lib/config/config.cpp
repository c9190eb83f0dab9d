#include "config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "error.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "net_policy.hpp"
#include "net_presets.hpp"
#include "output.hpp"
#include "paths.hpp"
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
int64_t MinPort() { return 1; }
int64_t MaxPort() { return 65535; }
int64_t MinVersion() { return 1; }
int64_t MaxVersion() { return 1; }

Json DefaultCpus() { return std::min<int64_t>(4, MaxCpus()); }
Json DefaultMemory() { return std::min<int64_t>(8 * kGiB, MaxMemory()); }
Json DefaultDisk() { return 100 * kGiB; }
Json DefaultTrue() { return true; }
Json DefaultVersion() { return 1; }
Json DefaultBackend() { return "auto"; }
Json DefaultAgent() { return "claude --dangerously-skip-permissions"; }
Json DefaultExclude() { return Json::array({"node_modules", ".git", "dist", "build"}); }
Json DefaultEmptyList() { return Json::array(); }
Json DefaultNetMode() { return "allowlist"; }
Json DefaultNetPresets() { return Json::array({"agent", "packages", "github"}); }
Json DefaultCdpPort() { return 9222; }
Json DefaultShell() { return "bash"; }
Json DefaultMode() { return "mount"; }
Json DefaultAgentBrowser() { return "auto"; }
Json DefaultFeed() { return "https://supersandbox.dev/releases"; }

bool IsSecretsKey(std::string_view key) {
  return key == "secrets" || key == "sandboxes.*.secrets" || key == "profiles.*.secrets";
}

bool IsEnvName(std::string_view s) { return NameOf(s, "A-Za-z_", "A-Za-z0-9_", s.size()); }

const std::vector<std::string> kBackends = {"auto",   "qemu", "lxd", "docker",
                                            "podman", "lume", "lima"};

std::vector<KeySpec> BuildSchema() {
  std::vector<KeySpec> s;
  auto add = [&](KeySpec k) { s.push_back(std::move(k)); };
  add({"version",
       ValueType::kInt,
       "config file format version",
       {},
       MinVersion,
       MaxVersion,
       "",
       DefaultVersion,
       ""});
  add({"backend", ValueType::kEnum, "default sandbox backend", kBackends, nullptr, nullptr, "",
       DefaultBackend, ""});
  add({"vm.cpus",
       ValueType::kInt,
       "CPUs given to a sandbox",
       {},
       MinCpus,
       MaxCpus,
       "host cores",
       DefaultCpus,
       "cpus"});
  add({"vm.memory",
       ValueType::kSize,
       "memory given to a sandbox",
       {},
       MinMemory,
       MaxMemory,
       "host RAM - 4GB",
       DefaultMemory,
       "memory"});
  add({"vm.disk",
       ValueType::kSize,
       "disk size of a sandbox",
       {},
       MinDisk,
       MaxDisk,
       "",
       DefaultDisk,
       "disk"});
  add({"updates.check",
       ValueType::kBool,
       "check for updates on launch",
       {},
       nullptr,
       nullptr,
       "",
       DefaultTrue,
       ""});
  add({"updates.auto_apply",
       ValueType::kBool,
       "apply updates without asking",
       {},
       nullptr,
       nullptr,
       "",
       DefaultTrue,
       ""});
  add({"updates.feed",
       ValueType::kString,
       "release feed URL",
       {},
       nullptr,
       nullptr,
       "",
       DefaultFeed,
       ""});
  add({"agent.command",
       ValueType::kString,
       "command that starts the agent in the sandbox",
       {},
       nullptr,
       nullptr,
       "",
       DefaultAgent,
       ""});
  add({"lxd.remote",
       ValueType::kString,
       "LXD remote that holds the sandboxes (empty: local)",
       {},
       nullptr,
       nullptr,
       "",
       nullptr,
       ""});
  add({"browser.cdp_port",
       ValueType::kInt,
       "host Chrome DevTools port",
       {},
       MinPort,
       MaxPort,
       "",
       DefaultCdpPort,
       ""});
  add({"sync.exclude",
       ValueType::kStringList,
       "paths ss sync never copies",
       {},
       nullptr,
       nullptr,
       "",
       DefaultExclude,
       ""});
  add({"projects.*.mode",
       ValueType::kEnum,
       "mount: the agent works in the shared folder; copy: in a working copy kept by ss sync",
       {"mount", "copy"},
       nullptr,
       nullptr,
       "",
       DefaultMode,
       ""});
  add({"secrets",
       ValueType::kStringList,
       "host variables passed into sessions (or a map: NAME: {inject: [hosts], from: ...}, see "
       "ss-config(5))",
       {},
       nullptr,
       nullptr,
       "",
       DefaultEmptyList,
       ""});
  // The egress policy (net_store.hpp): top level for every sandbox, sandboxes.NAME.network for
  // one (each key falls back to the top level's).
  auto add_network = [&](const std::string& prefix) {
    bool top = prefix == "network";
    std::string whose = top ? "sandboxes'" : "this sandbox's";
    add({prefix + ".mode",
         ValueType::kEnum,
         Cat(whose, " network: allowlist (the presets and allow rules), open, none"),
         {"allowlist", "open", "none"},
         nullptr,
         nullptr,
         "",
         top ? DefaultNetMode : nullptr,
         ""});
    add({prefix + ".presets",
         ValueType::kStringList,
         Cat("rule sets ", whose, " allowlist starts from (agent, packages, github)"),
         {},
         nullptr,
         nullptr,
         "",
         top ? DefaultNetPresets : nullptr,
         ""});
    add({prefix + ".allow",
         ValueType::kStringList,
         Cat("more destinations ", whose, " network may reach (name, *.name, name:port, CIDR)"),
         {},
         nullptr,
         nullptr,
         "",
         top ? DefaultEmptyList : nullptr,
         ""});
    add({prefix + ".deny",
         ValueType::kStringList,
         Cat("destinations ", whose, " network never reaches, whatever allows them"),
         {},
         nullptr,
         nullptr,
         "",
         top ? DefaultEmptyList : nullptr,
         ""});
  };
  add_network("network");
  add({"agent.config",
       ValueType::kString,
       "host folder whose files are copied into the sandbox's ~/.claude (never mounted)",
       {},
       nullptr,
       nullptr,
       "",
       nullptr,
       ""});
  add({"agent.browser",
       ValueType::kEnum,
       "auto: start the agent with --chrome when Claude in Chrome is the browser path; off: never",
       {"auto", "off"},
       nullptr,
       nullptr,
       "",
       DefaultAgentBrowser,
       ""});
  add({"image.packages",
       ValueType::kStringList,
       "Debian packages of your own added to the next image build",
       {},
       nullptr,
       nullptr,
       "",
       DefaultEmptyList,
       ""});
  add({"image.npm",
       ValueType::kStringList,
       "npm packages of your own installed globally by the next image build",
       {},
       nullptr,
       nullptr,
       "",
       DefaultEmptyList,
       ""});
  // One sandbox's settings (sandboxes.NAME) and a profile's (profiles.NAME, the settings of the
  // sandbox `--profile NAME` runs in): the same keys, each falling back to the top level's.
  auto add_sandbox = [&](const std::string& prefix, const std::string& whose) {
    add({prefix + ".backend", ValueType::kEnum, Cat("backend of ", whose), kBackends, nullptr,
         nullptr, "", nullptr, ""});
    add({prefix + ".cpus",
         ValueType::kInt,
         Cat("CPUs of ", whose),
         {},
         MinCpus,
         MaxCpus,
         "host cores",
         nullptr,
         ""});
    add({prefix + ".memory",
         ValueType::kSize,
         Cat("memory of ", whose),
         {},
         MinMemory,
         MaxMemory,
         "host RAM - 4GB",
         nullptr,
         ""});
    add({prefix + ".disk",
         ValueType::kSize,
         Cat("disk size of ", whose),
         {},
         MinDisk,
         MaxDisk,
         "",
         nullptr,
         ""});
    add({prefix + ".ephemeral",
         ValueType::kBool,
         "remove the sandbox when the session ends",
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".shell",
         ValueType::kEnum,
         "login shell of the sandbox user",
         {"bash", "fish"},
         nullptr,
         nullptr,
         "",
         DefaultShell,
         ""});
    add({prefix + ".deploy",
         ValueType::kString,
         "host folder shared read-write at /mnt/deploy, set when the sandbox is created",
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".mounts",
         ValueType::kStringList,
         "more host folders shared when the sandbox is created: HOST:GUEST or HOST:GUEST:ro",
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".env",
         ValueType::kStringList,
         "variables of every session: NAME (the host's value) or NAME=VALUE",
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".secrets",
         ValueType::kStringList,
         Cat("host variables passed into ", whose, " (or a map, as secrets)"),
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".agent.command",
         ValueType::kString,
         Cat("command that starts the agent in ", whose),
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add({prefix + ".agent.config",
         ValueType::kString,
         Cat("host folder copied into the ~/.claude of ", whose),
         {},
         nullptr,
         nullptr,
         "",
         nullptr,
         ""});
    add_network(prefix + ".network");
  };
  add_sandbox("sandboxes.*", "this sandbox");
  add({"profiles.*.description",
       ValueType::kString,
       "what the profile is for (ss profiles)",
       {},
       nullptr,
       nullptr,
       "",
       nullptr,
       ""});
  add_sandbox("profiles.*", "this profile's sandbox");
  return s;
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

std::string Position(const std::string& file, const YAML::Mark& mark) {
  if (mark.line < 0) return file;
  return Cat(file, ":", mark.line + 1, ":", mark.column + 1);
}

[[noreturn]] void FileError(const std::string& file, const YAML::Mark& mark, std::string message,
                            std::vector<std::string> hints = {}) {
  hints.push_back(Cat("edit ", file, ", or see ss-config(5) for every key"));
  throw Error(kExitConfig, Cat(Position(file, mark), ": ", message), {}, std::move(hints));
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

Json ConvertNode(const KeySpec& spec, std::string_view key, const YAML::Node& key_node,
                 const YAML::Node& node, const std::string& file, const std::string& text) {
  std::string problem;
  if (node.IsNull()) {
    FileError(file, key_node.Mark(), Cat(key, ": a value is required (", TypeWord(spec), ")"));
  }
  if (spec.type == ValueType::kStringList) {
    if (!node.IsSequence()) FileError(file, node.Mark(), Cat(key, ": expected a list of strings"));
    Json out = Json::array();
    for (const auto& item : node) {
      if (!item.IsScalar()) FileError(file, item.Mark(), Cat(key, ": list items must be strings"));
      out.push_back(item.Scalar());
    }
    if (auto bad = CheckValue(spec, out)) FileError(file, node.Mark(), Cat(key, ": ", *bad));
    return out;
  }
  if (!node.IsScalar()) FileError(file, node.Mark(), Cat(key, ": expected ", TypeWord(spec)));
  size_t pos = static_cast<size_t>(std::max(0, node.Mark().pos));
  bool quoted = pos < text.size() && (text[pos] == '"' || text[pos] == '\'');
  Json value = ConvertScalar(spec, node.Scalar(), quoted, &problem);
  if (value.is_null()) FileError(file, node.Mark(), Cat(key, ": ", problem));
  if (auto bad = CheckValue(spec, value)) FileError(file, node.Mark(), Cat(key, ": ", *bad));
  return value;
}

// Where a quoted scalar that starts at `pos` ends (just past its closing quote), or npos when the
// file ends first (yaml-cpp takes the rest of the file as the string).
size_t QuotedEnd(const std::string& text, size_t pos) {
  char q = text[pos];
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;
    } else if (text[i] == q) {
      if (q == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;
        continue;
      }
      return i + 1;
    }
  }
  return std::string::npos;
}

// What yaml-cpp lets through and ss-config(5) refuses: tags, and a quote never closed.
void CheckStrict(const YAML::Node& node, const std::string& file, const std::string& text) {
  if (!node.IsDefined() || node.IsNull()) return;
  const std::string& tag = node.Tag();
  if (!tag.empty() && tag != "?" && tag != "!") {
    FileError(file, node.Mark(), Cat("invalid YAML: the tag ", Quoted(tag), " is not supported"));
  }
  if (node.IsScalar() && tag == "!") {
    size_t pos = static_cast<size_t>(std::max(0, node.Mark().pos));
    if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'') &&
        QuotedEnd(text, pos) == std::string::npos) {
      FileError(file, node.Mark(), "invalid YAML: this quoted string is never closed");
    }
  }
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      CheckStrict(it->first, file, text);
      CheckStrict(it->second, file, text);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) CheckStrict(item, file, text);
  }
}

// `secrets` written as a map: NAME: (nothing) passes the variable in as the list form does;
// NAME: {from: {env: VAR} | {file: PATH} | {command: [argv]}} passes in the value read there on
// the host at each session; NAME: {inject: [hosts], from: ...} gives the sandbox a placeholder
// that ss-net replaces with the value (from $NAME by default) in requests to those hosts.
struct SecretsMap {
  Json names = Json::array();
  Json inject = Json::object();  // {NAME: {inject, from}}
  Json from = Json::object();    // {NAME: from}, for the secrets that are not injected
};

SecretsMap ConvertSecretsMap(const std::string& key, const YAML::Node& node,
                             const std::string& file) {
  SecretsMap out;
  Json &names = out.names, &inject = out.inject;
  auto scalar_list = [&](const YAML::Node& n, const std::string& what) {
    if (!n.IsSequence() || n.size() == 0) {
      FileError(file, n.Mark(), Cat(what, ": expected a list of strings"));
    }
    Json out = Json::array();
    for (const auto& item : n) {
      if (!item.IsScalar()) FileError(file, item.Mark(), Cat(what, ": list items must be strings"));
      out.push_back(item.Scalar());
    }
    return out;
  };
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node name_node = it->first;
    const YAML::Node spec = it->second;
    std::string name = name_node.IsScalar() ? name_node.Scalar() : std::string();
    if (!NameOf(name, "A-Za-z_", "A-Za-z0-9_", name.size())) {
      FileError(file, name_node.Mark(),
                Cat(key, ": ", Quoted(name),
                    " is not an environment variable name (letters, digits and '_', "
                    "not starting with a digit)"));
    }
    names.push_back(name);
    if (spec.IsNull()) continue;
    std::string where = Cat(key, ".", name);
    if (!spec.IsMap()) FileError(file, spec.Mark(), Cat(where, ": expected inject: and from:"));
    Json entry = {{"from", {{"env", name}}}};
    for (auto f = spec.begin(); f != spec.end(); ++f) {
      std::string field = f->first.Scalar();
      const YAML::Node value = f->second;
      if (field == "inject") {
        entry["inject"] = scalar_list(value, Cat(where, ".inject"));
        for (const auto& host : entry["inject"]) {
          const std::string& h = host.get_ref<const std::string&>();
          if (NormaliseHostName(h) != ToLower(h) || ParseIpAddress(h)) {
            FileError(file, value.Mark(),
                      Cat(where, ".inject: ", Quoted(h), " is not a host name (exact names only)"));
          }
        }
      } else if (field == "from") {
        if (!value.IsMap() || value.size() != 1) {
          FileError(file, value.Mark(),
                    Cat(where, ".from: expected one of env: NAME, file: PATH, command: [ARGV]"));
        }
        std::string kind = value.begin()->first.Scalar();
        const YAML::Node v = value.begin()->second;
        if (kind == "env" && v.IsScalar() && NameOf(v.Scalar(), "A-Za-z_", "A-Za-z0-9_", 255)) {
          entry["from"] = {{"env", v.Scalar()}};
        } else if (kind == "file" && v.IsScalar() && v.Scalar().starts_with("/")) {
          entry["from"] = {{"file", v.Scalar()}};
        } else if (kind == "command") {
          entry["from"] = {{"command", scalar_list(v, Cat(where, ".from.command"))}};
        } else {
          FileError(file, value.Mark(),
                    Cat(where,
                        ".from: expected env: NAME, file: ABSOLUTE-PATH or "
                        "command: [PROGRAM, ARGS...]"));
        }
      } else {
        FileError(file, f->first.Mark(),
                  Cat("unknown key '", where, ".", field, "'; a secret has inject: and from:"));
      }
    }
    if (entry.contains("inject")) {
      inject[name] = entry;
    } else {
      out.from[name] = entry["from"];
    }
  }
  return out;
}

void Walk(const YAML::Node& node, const std::string& prefix, const std::string& file,
          const std::string& text, std::map<std::string, Json>& out) {
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // A copy: the iterator's -> returns a temporary, so a reference would dangle.
    const YAML::Node key_node = it->first;
    if (!key_node.IsScalar()) FileError(file, key_node.Mark(), "keys must be plain names");
    std::string name = key_node.Scalar();
    std::string path = prefix.empty() ? name : Cat(prefix, ".", name);
    if (!seen.insert(name).second)
      FileError(file, key_node.Mark(), Cat("duplicate key '", path, "'"));
    std::string canonical;
    bool bad_name = false;
    const KeySpec* spec = nullptr;
    for (const auto& s : ConfigSchema()) {
      if (MatchPattern(s.key, path, &bad_name)) spec = &s;
    }
    bool is_section = !spec && IsSection(path, &bad_name);
    if (bad_name) {
      FileError(file, key_node.Mark(),
                Cat("invalid sandbox name in '", path,
                    "': use lowercase letters, numbers and hyphens, starting with a letter"));
    }
    if (spec && IsSecretsKey(spec->key) && it->second.IsMap()) {
      SecretsMap secrets = ConvertSecretsMap(path, it->second, file);
      out[path] = secrets.names;
      if (!secrets.inject.empty()) out[path + "#inject"] = secrets.inject;
      if (!secrets.from.empty()) out[path + "#from"] = secrets.from;
      continue;
    }
    if (spec) {
      out[path] = ConvertNode(*spec, path, key_node, it->second, file, text);
      continue;
    }
    if (is_section) {
      if (it->second.IsNull()) continue;
      if (!it->second.IsMap())
        FileError(file, it->second.Mark(), Cat(path, ": expected a section of keys"));
      Walk(it->second, path, file, text, out);
      continue;
    }
    std::vector<std::string> hints;
    std::vector<std::string> names;
    for (const auto& s : ConfigSchema()) names.push_back(s.key);
    if (auto guess = Suggest(path, names)) hints.push_back(Cat("did you mean '", *guess, "'?"));
    FileError(file, key_node.Mark(), Cat("unknown key '", path, "'"), hints);
  }
}

std::string LeadingComments(const std::string& text) {
  std::string out;
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (!t.empty() && t[0] != '#') break;
    out += line + "\n";
  }
  return out;
}

const char* kNewFileHeader =
    "# ss configuration. Every key, its range and its default: man 5 ss-config\n";

// ---- text edits that keep the user's file ----

struct Line {
  size_t begin, end;  // [begin, end) without the newline
};

std::vector<Line> LinesOf(const std::string& text) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      if (start < text.size()) lines.push_back({start, text.size()});
      break;
    }
    lines.push_back({start, nl});
    start = nl + 1;
  }
  return lines;
}

size_t Indent(const std::string& text, const Line& l) {
  size_t i = l.begin;
  while (i < l.end && text[i] == ' ') ++i;
  return i - l.begin;
}

bool IsBlankOrComment(const std::string& text, const Line& l) {
  std::string_view t = Trim(std::string_view(text).substr(l.begin, l.end - l.begin));
  return t.empty() || t[0] == '#';
}

size_t LineIndexAt(const std::vector<Line>& lines, size_t pos) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (pos >= lines[i].begin && pos <= lines[i].end) return i;
  }
  return lines.empty() ? 0 : lines.size() - 1;
}

// End of a block value that starts on the line of a key with the given indent: the end of the
// last following line that is indented deeper (or is a "- " item at the same indent).
size_t BlockValueEnd(const std::string& text, const std::vector<Line>& lines, size_t key_line,
                     size_t key_indent) {
  size_t end = lines[key_line].end;
  for (size_t i = key_line + 1; i < lines.size(); ++i) {
    if (IsBlankOrComment(text, lines[i])) continue;
    size_t ind = Indent(text, lines[i]);
    bool item = text.compare(lines[i].begin + ind, 2, "- ") == 0 ||
                text.compare(lines[i].begin + ind, 1, "-") == 0;
    if (ind > key_indent || (ind == key_indent && item)) {
      end = lines[i].end;
      continue;
    }
    break;
  }
  return end;
}

// End of a plain or quoted scalar starting at pos.
size_t ScalarEnd(const std::string& text, size_t pos, bool flow) {
  if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'')) {
    char q = text[pos];
    size_t i = pos + 1;
    while (i < text.size()) {
      if (q == '\'' && text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        i += 2;
        continue;
      }
      if (q == '"' && text[i] == '\\') {
        i += 2;
        continue;
      }
      if (text[i] == q) return i + 1;
      ++i;
    }
    return text.size();
  }
  size_t i = pos;
  while (i < text.size() && text[i] != '\n') {
    if (text[i] == '#' && i > pos && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
    if (flow && (text[i] == ',' || text[i] == '}' || text[i] == ']')) break;
    ++i;
  }
  while (i > pos && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
  return i;
}

std::string YamlScalar(const Json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    bool looks_special =
        ParseBool(s) || ParseInt(s) || s == "null" || s == "~" || (!s.empty() && s.back() == ' ');
    if (NameOf(s, "A-Za-z0-9_./@+-", "A-Za-z0-9_./@+ -", s.size()) && !looks_special) return s;
    return Json(s).dump();  // a JSON string is a valid YAML double-quoted scalar
  }
  return v.dump();
}

std::string YamlInline(const KeySpec& spec, const Json& v) {
  if (spec.type == ValueType::kSize) return FormatSizeConfig(v.get<int64_t>());
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : v) items.push_back(YamlScalar(item));
    return Cat("[", Join(items, ", "), "]");
  }
  return YamlScalar(v);
}

// Returns the edited text, or nullopt when the file's shape needs a full rewrite.
std::optional<std::string> EditText(const std::string& text, const std::vector<std::string>& parts,
                                    const std::string& inline_value) {
  YAML::Node root = YAML::Load(text);
  std::vector<Line> lines = LinesOf(text);
  if (root.IsNull() ||
      (root.IsMap() && root.size() == 0 && Trim(text).find('{') == std::string::npos)) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    std::string indent;
    for (size_t i = 0; i < parts.size(); ++i) {
      out += Cat(indent, parts[i], ":", i + 1 == parts.size() ? " " + inline_value : "", "\n");
      indent += "  ";
    }
    return out;
  }
  if (!root.IsMap() || root.Style() == YAML::EmitterStyle::Flow) return std::nullopt;

  YAML::Node node = root;
  YAML::Node key_node;
  size_t depth = 0;
  for (; depth < parts.size(); ++depth) {
    if (!node.IsMap()) break;
    YAML::Node found_key, found_value;
    bool found = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == parts[depth]) {
        found_key = it->first;
        found_value = it->second;
        found = true;
      }
    }
    if (!found) break;
    key_node = found_key;
    node = found_value;
  }

  auto key_line_of = [&](const YAML::Node& k) {
    return LineIndexAt(lines, static_cast<size_t>(k.Mark().pos));
  };
  auto after_colon = [&](const YAML::Node& k) -> std::optional<size_t> {
    size_t pos = static_cast<size_t>(k.Mark().pos);
    size_t colon = text.find(':', pos + k.Scalar().size());
    if (colon == std::string::npos) return std::nullopt;
    return colon + 1;
  };

  if (depth == parts.size()) {
    // The key exists: replace its value.
    size_t kline = key_line_of(key_node);
    size_t kindent = static_cast<size_t>(key_node.Mark().column);
    auto start = after_colon(key_node);
    if (!start) return std::nullopt;
    if (node.IsScalar() && node.Mark().pos >= 0) {
      size_t pos = static_cast<size_t>(node.Mark().pos);
      if (text.compare(pos, 1, "|") == 0 || text.compare(pos, 1, ">") == 0) return std::nullopt;
      bool flow = LineIndexAt(lines, pos) == kline && text.find('{', lines[kline].begin) < pos;
      size_t end = ScalarEnd(text, pos, flow);
      return text.substr(0, pos) + inline_value + text.substr(end);
    }
    if (node.IsSequence() && node.Style() == YAML::EmitterStyle::Flow) {
      size_t open = text.find('[', *start);
      if (open == std::string::npos) return std::nullopt;
      int level = 0;
      for (size_t i = open; i < text.size(); ++i) {
        if (text[i] == '[') ++level;
        if (text[i] == ']' && --level == 0) {
          return text.substr(0, open) + inline_value + text.substr(i + 1);
        }
      }
      return std::nullopt;
    }
    if (node.IsNull() || node.IsSequence()) {
      size_t end = node.IsNull() ? ScalarEnd(text, *start, false)
                                 : BlockValueEnd(text, lines, kline, kindent);
      return text.substr(0, *start) + " " + inline_value + text.substr(end);
    }
    return std::nullopt;
  }

  // Missing key: add it (and any missing sections) as the last child of the deepest section.
  std::vector<std::string> rest(parts.begin() + static_cast<long>(depth), parts.end());
  auto render = [&](size_t base) {
    std::string out;
    for (size_t i = 0; i < rest.size(); ++i) {
      out += Cat(std::string(base + 2 * i, ' '), rest[i], ":",
                 i + 1 == rest.size() ? " " + inline_value : "", "\n");
    }
    return out;
  };
  if (depth == 0) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + render(0);
  }
  size_t kline = key_line_of(key_node);
  size_t kindent = static_cast<size_t>(key_node.Mark().column);
  if (node.IsNull()) {
    auto start = after_colon(key_node);
    if (!start) return std::nullopt;
    size_t end = ScalarEnd(text, *start, false);
    std::string tail = text.substr(end);
    std::string rendered = render(kindent + 2);
    rendered.pop_back();  // the line's own newline follows
    return text.substr(0, *start) + "\n" + rendered + tail;
  }
  if (node.IsMap() && node.Style() == YAML::EmitterStyle::Flow) {
    // "section: {a: 1}" becomes "section: {a: 1, key: value}".
    auto start = after_colon(key_node);
    size_t open = start ? text.find('{', *start) : std::string::npos;
    if (open == std::string::npos) return std::nullopt;
    int level = 0;
    for (size_t i = open; i < text.size(); ++i) {
      if (text[i] == '{') ++level;
      if (text[i] == '}' && --level == 0) {
        std::string flow;
        for (size_t j = 0; j < rest.size(); ++j) {
          flow += Cat(rest[j], ": ", j + 1 == rest.size() ? inline_value : "{");
        }
        flow += std::string(rest.size() - 1, '}');
        bool empty = Trim(std::string_view(text).substr(open + 1, i - open - 1)).empty();
        return text.substr(0, i) + (empty ? "" : ", ") + flow + text.substr(i);
      }
    }
    return std::nullopt;
  }
  if (!node.IsMap()) return std::nullopt;
  size_t child_indent = kindent + 2;
  for (auto it = node.begin(); it != node.end(); ++it) {
    child_indent = static_cast<size_t>(it->first.Mark().column);
    break;
  }
  size_t end = BlockValueEnd(text, lines, kline, kindent);
  std::string insert = render(child_indent);
  if (end >= text.size()) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + insert;
  }
  return text.substr(0, end + 1) + insert + text.substr(end + 1);
}

// The text without the key at `parts` and its value (block style only): nullopt when the file's
// shape is not one this edit handles, the text itself when the key is not there.
std::optional<std::string> RemoveText(const std::string& text,
                                      const std::vector<std::string>& parts) {
  YAML::Node root = YAML::Load(text);
  if (!root.IsMap()) return root.IsNull() ? std::optional<std::string>(text) : std::nullopt;
  // reset(), not '=': assigning a Node writes through to the node it refers to.
  YAML::Node node, key_node;
  node.reset(root);
  for (size_t depth = 0; depth < parts.size(); ++depth) {
    if (!node.IsMap()) return text;
    if (node.Style() == YAML::EmitterStyle::Flow) return std::nullopt;
    YAML::Node found_key, found_value;
    bool found = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == parts[depth]) {
        found_key.reset(it->first);
        found_value.reset(it->second);
        found = true;
      }
    }
    if (!found) return text;
    key_node.reset(found_key);
    node.reset(found_value);
  }
  std::vector<Line> lines = LinesOf(text);
  size_t kline = LineIndexAt(lines, static_cast<size_t>(key_node.Mark().pos));
  if (Indent(text, lines[kline]) != static_cast<size_t>(key_node.Mark().column)) {
    return std::nullopt;  // not the first thing on its line
  }
  size_t end = BlockValueEnd(text, lines, kline, static_cast<size_t>(key_node.Mark().column));
  if (end >= text.size()) return text.substr(0, lines[kline].begin);
  return text.substr(0, lines[kline].begin) + text.substr(end + 1);
}

// Full rewrite for shapes the text edit does not handle (flow-style sections, block scalars):
// the values survive, the leading comment block survives, other comments do not.
std::string Rewrite(const std::string& text, const std::vector<std::string>& parts,
                    const YAML::Node& value) {
  YAML::Node root = text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(text);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child.IsMap()) chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(chain.back()[parts[i]]);
  }
  chain.back()[parts.back()] = value;
  YAML::Emitter emitter;
  emitter.SetIndent(2);
  emitter << root;
  std::string header = LeadingComments(text);
  return header + emitter.c_str() + "\n";
}

YAML::Node ToYaml(const KeySpec& spec, const Json& v) {
  if (spec.type == ValueType::kSize) return YAML::Node(FormatSizeConfig(v.get<int64_t>()));
  if (v.is_array()) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& item : v) seq.push_back(item.get<std::string>());
    return seq;
  }
  if (v.is_boolean()) return YAML::Node(v.get<bool>());
  if (v.is_number_integer()) return YAML::Node(v.get<int64_t>());
  return YAML::Node(v.get<std::string>());
}

}  // namespace

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

Config Config::Load() { return LoadFile(ConfigPath()); }

Config Config::LoadFile(const std::string& path) {
  std::optional<std::string> text;
  try {
    text = ReadFileIfExists(path);
  } catch (const Error& e) {
    throw Error(kExitConfig, e.what(), {}, {Cat("check the permissions of ", path)});
  }
  if (!text) {
    Config c;
    c.path_ = path;
    return c;
  }
  Config c = Parse(*text, path);
  c.exists_ = true;
  return c;
}

Config Config::Parse(std::string_view text_view, const std::string& path) {
  Config c;
  c.path_ = path;
  std::string text(text_view);
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1) {
      FileError(path, docs[1].Mark(),
                "invalid YAML: a second document ('---'); the file holds one");
    }
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::Exception& e) {
    FileError(path, e.mark, Cat("invalid YAML: ", e.msg));
  }
  CheckStrict(root, path, text);
  if (root.IsNull()) return c;  // an empty file is all defaults
  if (!root.IsMap()) FileError(path, root.Mark(), "expected a mapping of keys (such as 'vm:')");
  Walk(root, "", path, text, c.values_);
  return c;
}

Json Config::Get(std::string_view key) const {
  std::string canonical;
  const KeySpec* spec = FindKeySpec(key, &canonical);
  if (!spec) throw Error(kExitSoftware, Cat("internal: unknown config key '", key, "'"));
  auto it = values_.find(canonical);
  if (it != values_.end()) return it->second;
  return spec->default_value ? spec->default_value() : Json();
}

bool Config::IsSet(std::string_view key) const {
  std::string canonical;
  if (!FindKeySpec(key, &canonical)) return false;
  return values_.count(canonical) > 0;
}

std::string Config::String(std::string_view key) const {
  Json v = Get(key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::vector<std::string> Config::List(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& item : Get(key)) out.push_back(item.get<std::string>());
  return out;
}

// The first of sandboxes.NAME.FIELD and profiles.NAME.FIELD that is set; empty when neither is.
std::string Config::SandboxKey(std::string_view sandbox, std::string_view field) const {
  for (const char* section : {"sandboxes.", "profiles."}) {
    std::string key = Cat(section, sandbox, ".", field);
    if (FindKeySpec(key) && IsSet(key)) return key;
  }
  return {};
}

Json Config::SandboxValue(std::string_view sandbox, std::string_view field) const {
  if (std::string key = SandboxKey(sandbox, field); !key.empty()) return Get(key);
  static const std::map<std::string, std::string, std::less<>> fallback = {
      {"cpus", "vm.cpus"},
      {"memory", "vm.memory"},
      {"disk", "vm.disk"},
      {"backend", "backend"},
      {"secrets", "secrets"},
      {"agent.command", "agent.command"},
      {"agent.config", "agent.config"},
      {"network.mode", "network.mode"},
      {"network.presets", "network.presets"},
      {"network.allow", "network.allow"},
      {"network.deny", "network.deny"}};
  auto it = fallback.find(field);
  if (it != fallback.end()) return Get(it->second);
  std::string key = Cat("sandboxes.", sandbox, ".", field);
  return FindKeySpec(key) ? Get(key) : Json();
}

// What the map form of the sandbox's secrets (else the top level's) holds beside the names:
// "#inject" or "#from".
Json Config::SecretsPart(std::string_view sandbox, std::string_view part) const {
  std::string key = SandboxKey(sandbox, "secrets");
  auto it = values_.find(Cat(key.empty() ? std::string("secrets") : key, part));
  return it == values_.end() ? Json::object() : it->second;
}

Json Config::SecretInjections(std::string_view sandbox) const {
  return SecretsPart(sandbox, "#inject");
}

Json Config::SecretSources(std::string_view sandbox) const { return SecretsPart(sandbox, "#from"); }

// The NAMEs of `section`.NAME.* set in the file, sorted.
std::vector<std::string> Config::NamesUnder(std::string_view section) const {
  std::set<std::string> names;
  for (const auto& [key, value] : values_) {
    if (key.starts_with(section) && key.size() > section.size() && key[section.size()] == '.') {
      names.insert(Split(key, '.')[1]);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> Config::SandboxNames() const { return NamesUnder("sandboxes"); }

std::vector<std::string> Config::ProfileNames() const { return NamesUnder("profiles"); }

void Config::Override(const std::string& key, Json value) { values_[key] = std::move(value); }

bool Config::UpdatesEnabled() const {
  const char* env = std::getenv("SS_NO_UPDATE");
  if (env && *env) return false;
  return Bool("updates.check");
}

std::vector<std::pair<std::string, Json>> Config::Entries(bool include_defaults) const {
  std::vector<std::pair<std::string, Json>> out;
  for (const auto& spec : ConfigSchema()) {
    if (spec.key.find('*') != std::string::npos) {
      for (const auto& [key, value] : values_) {
        bool bad = false;
        if (MatchPattern(spec.key, key, &bad)) out.emplace_back(key, value);
      }
      continue;
    }
    auto it = values_.find(spec.key);
    if (it != values_.end()) {
      out.emplace_back(spec.key, it->second);
    } else if (include_defaults) {
      out.emplace_back(spec.key, spec.default_value ? spec.default_value() : Json());
    }
  }
  return out;
}

std::pair<std::string, Json> SetConfigValue(const std::string& path, std::string_view key,
                                            std::string_view text) {
  std::string canonical;
  const KeySpec* spec = FindKeySpec(key, &canonical);
  if (!spec) throw UnknownKeyError(key);
  Json value = ParseValueText(*spec, canonical, text);
  std::vector<std::string> parts = Split(canonical, '.');

  MakeDirs(Dirname(path), 0755);
  FileLock lock(Cat(Dirname(path), "/.", Basename(path), ".lock"), FileLock::kExclusive,
                std::chrono::seconds(10), Basename(path));
  std::optional<std::string> existing = ReadFileIfExists(path);
  std::string original = existing ? *existing : Cat(kNewFileHeader, "version: 1\n");
  // A file that is already invalid is only touched when this edit makes it valid (setting the
  // very key that is wrong); otherwise its own error is reported and it stays as it is.
  std::optional<Error> original_error;
  try {
    Config::Parse(original, path);
  } catch (const Error& e) {
    original_error = e;
  }

  std::optional<std::string> edited;
  try {
    edited = EditText(original, parts, YamlInline(*spec, value));
  } catch (const std::exception& e) {
    Debug(Cat("config: in-place edit failed (", e.what(), "); rewriting the file"));
  }
  if (edited) {
    try {
      if (Config::Parse(*edited, path).Get(canonical) != value) edited.reset();
    } catch (const Error&) {
      if (original_error) throw *original_error;
      edited.reset();
    }
  }
  if (!edited) {
    if (original_error) throw *original_error;
    edited = Rewrite(original, parts, ToYaml(*spec, value));
    if (Config::Parse(*edited, path).Get(canonical) != value) {
      throw Error(kExitSoftware, Cat("internal: could not write ", canonical, " to ", path));
    }
  }
  // Whatever way the text was edited, only this key may have changed.
  if (!original_error) {
    auto before = Config::Parse(original, path).Entries(false);
    auto after = Config::Parse(*edited, path).Entries(false);
    std::map<std::string, Json> want(before.begin(), before.end());
    want[canonical] = value;
    if (std::map<std::string, Json>(after.begin(), after.end()) != want) {
      throw Error(kExitSoftware,
                  Cat("internal: setting ", canonical, " would change other keys in ", path,
                      "; the file was left as it was"));
    }
  }
  AtomicWrite(path, *edited, 0644);
  return {canonical, value};
}

void UnsetConfigSection(const std::string& path, std::string_view key) {
  std::vector<std::string> parts = Split(std::string(key), '.');
  FileLock lock(Cat(Dirname(path), "/.", Basename(path), ".lock"), FileLock::kExclusive,
                std::chrono::seconds(10), Basename(path));
  std::optional<std::string> original = ReadFileIfExists(path);
  if (!original) return;
  auto before = Config::Parse(*original, path).Entries(false);  // an invalid file: its error
  std::map<std::string, Json> want;
  for (const auto& [k, v] : before) {
    if (k != key && k.rfind(Cat(key, "."), 0) != 0) want[k] = v;
  }
  if (want.size() == before.size()) return;
  std::optional<std::string> edited;
  try {
    edited = RemoveText(*original, parts);
  } catch (const std::exception& e) {
    Debug(Cat("config: in-place removal failed (", e.what(), "); rewriting the file"));
  }
  auto matches = [&](const std::string& text) {
    try {
      auto after = Config::Parse(text, path).Entries(false);
      return std::map<std::string, Json>(after.begin(), after.end()) == want;
    } catch (const Error&) {
      return false;
    }
  };
  if (!edited || !matches(*edited)) {
    YAML::Node root = YAML::Load(*original);
    YAML::Node parent;
    parent.reset(root);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = parent[parts[i]];
      parent.reset(child);
    }
    parent.remove(parts.back());
    YAML::Emitter emitter;
    emitter.SetIndent(2);
    emitter << root;
    edited = LeadingComments(*original) + emitter.c_str() + "\n";
    if (!matches(*edited)) {
      throw Error(kExitSoftware, Cat("internal: could not remove ", key, " from ", path,
                                     "; the file was left as it was"));
    }
  }
  AtomicWrite(path, *edited, 0644);
}

}  // namespace ss
