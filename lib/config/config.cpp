#include "config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "error.hpp"
#include "fs.hpp"
#include "net_policy.hpp"
#include "paths.hpp"
#include "strings.hpp"
#include "suggest.hpp"

namespace ss {
namespace {

std::string Position(const std::string& file, const YAML::Mark& mark) {
  if (mark.line < 0) return file;
  return Cat(file, ":", mark.line + 1, ":", mark.column + 1);
}

[[noreturn]] void FileError(const std::string& file, const YAML::Mark& mark, std::string message,
                            std::vector<std::string> hints = {}) {
  hints.push_back(Cat("edit ", file, ", or see ss-config(5) for every key"));
  throw Error(kExitConfig, Cat(Position(file, mark), ": ", message), {}, std::move(hints));
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
      } else if (field == "headers") {
        entry["headers"] = scalar_list(value, Cat(where, ".headers"));
        for (const auto& h : entry["headers"]) {
          if (!IsHeaderName(h.get_ref<const std::string&>())) {
            FileError(file, value.Mark(),
                      Cat(where, ".headers: ", Quoted(h.get_ref<const std::string&>()),
                          " is not a header name"));
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
        FileError(
            file, f->first.Mark(),
            Cat("unknown key '", where, ".", field, "'; a secret has inject:, headers: and from:"));
      }
    }
    if (entry.contains("headers") && !entry.contains("inject")) {
      FileError(file, spec.Mark(), Cat(where, ".headers: only for a secret with inject:"));
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

}  // namespace

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
      {"processes", "vm.processes"},
      {"open_files", "vm.open_files"},
      {"backend", "backend"},
      {"secrets", "secrets"},
      {"agent.command", "agent.command"},
      {"agent.config", "agent.config"},
      {"network.mode", "network.mode"},
      {"network.presets", "network.presets"},
      {"network.allow", "network.allow"},
      {"network.deny", "network.deny"},
      {"network.connections", "network.connections"}};
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

}  // namespace ss
