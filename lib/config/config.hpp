// config.yaml, loaded with exact errors (config_schema.hpp has its keys, config_edit.hpp the
// edits that keep the user's file).
//
// Every key is a row of the schema (ConfigSchema()); a section is just a dotted prefix, so adding
// a key or a section is adding a row. "sandboxes.*.x" rows match any sandbox name. Values are
// held as JSON (numbers, booleans, strings, string arrays; sizes as integer bytes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config_schema.hpp"
#include "error.hpp"
#include "json_out.hpp"

namespace ss {

class Config {
 public:
  // The user's config ($SS_HOME/config.yaml), or defaults when there is none. Errors in the file
  // throw ss::Error(78) with file:line:column.
  static Config Load();
  static Config LoadFile(const std::string& path);
  static Config Parse(std::string_view text, const std::string& path);

  const std::string& path() const { return path_; }
  bool file_exists() const { return exists_; }

  // Effective value: the file's, else the default. Unknown keys throw ss::Error(70).
  Json Get(std::string_view key) const;
  bool IsSet(std::string_view key) const;
  int64_t Int(std::string_view key) const { return Get(key).get<int64_t>(); }
  bool Bool(std::string_view key) const { return Get(key).get<bool>(); }
  std::string String(std::string_view key) const;
  std::vector<std::string> List(std::string_view key) const;

  // Sandbox settings fall back from sandboxes.<name>.<field> to profiles.<name>.<field> (the
  // profile of that name: `--profile NAME` runs in the sandbox NAME), then to the global key
  // (cpus/memory/disk → vm.*, backend → backend, agent.*, network.*, secrets).
  Json SandboxValue(std::string_view sandbox, std::string_view field) const;
  // Which of sandboxes.<name>.<field> and profiles.<name>.<field> is set (that order); empty
  // when neither is.
  std::string SandboxKey(std::string_view sandbox, std::string_view field) const;
  std::vector<std::string> SandboxNames() const;
  // The profiles config.yaml defines (profiles.NAME), sorted.
  std::vector<std::string> ProfileNames() const;
  // Sets `key` for this process only (command-line flags over the file: --ephemeral, --keep).
  void Override(const std::string& key, Json value);
  // The secrets ss-net injects for `sandbox` instead of passing them in (`secrets` written as a
  // map with inject:): {NAME: {"inject": [hosts], "from": {"env"|"file"|"command": ...}}}.
  Json SecretInjections(std::string_view sandbox) const;
  // Where the secrets passed in are read on the host when that is not $NAME (`secrets` written as
  // a map with from: and no inject:): {NAME: {"env"|"file"|"command": ...}}.
  Json SecretSources(std::string_view sandbox) const;

  // Checks for updates unless updates.check is false or SS_NO_UPDATE is set.
  bool UpdatesEnabled() const;

  // Every set key and its value, in schema order (wildcard rows expanded).
  std::vector<std::pair<std::string, Json>> Entries(bool include_defaults) const;

 private:
  std::vector<std::string> NamesUnder(std::string_view section) const;
  Json SecretsPart(std::string_view sandbox, std::string_view part) const;

  std::string path_;
  bool exists_ = false;
  std::map<std::string, Json> values_;
};

}  // namespace ss
