#include "net_store.hpp"

#include <nlohmann/json.hpp>

#include "browser.hpp"
#include "config.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "image.hpp"
#include "net_presets.hpp"
#include "sandbox.hpp"
#include "ssh_command.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// What the presets read: the image the sandbox was made from (its record names it), else the
// newest image built here, else the defaults the image build uses. The agent's version says
// whether Claude in Chrome goes through Anthropic's relay.
NetPresetContext PresetContext(const std::string& sandbox) {
  NetPresetContext c{"http://deb.debian.org/debian", "https://registry.npmjs.org", false};
  std::optional<ImageInfo> image;
  if (auto record = ReadFileIfExists(Cat(SandboxesDir(), "/", sandbox, "/sandbox.json"))) {
    auto j = nlohmann::json::parse(*record, nullptr, false);
    if (j.is_object() && j.contains("image") && j["image"].is_string()) {
      image = FindImage(j["image"].get<std::string>());
    }
  }
  if (!image) {
    auto all = ListImages();
    if (!all.empty()) image = all.front();  // newest first
  }
  if (image) {
    c.mirror = image->mirror;
    c.npm_registry = image->npm_registry;
    if (image->versions.is_object() && image->versions.contains("claude_code") &&
        image->versions["claude_code"].is_string()) {
      auto agent = ParseAgentVersion(image->versions["claude_code"].get<std::string>());
      c.browser_relay = agent && UsesRelay(*agent);
    }
  }
  return c;
}

// [{"allow": RULE} | {"deny": RULE} | {"mode": MODE}, ...], oldest first.
nlohmann::json LoadChanges(const std::string& sandbox) {
  auto text = ReadFileIfExists(NetChangesPath(sandbox));
  if (!text) return nlohmann::json::array();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_array()) {
    throw Error(kExitDataErr, Cat("the network changes of sandbox ", Quoted(sandbox),
                                  " are not a JSON list: ", NetChangesPath(sandbox)));
  }
  return j;
}

// Adds each rule to `to` (once) and removes it from `from`.
void Move(std::vector<NetRule>& to, std::vector<NetRule>& from, const NetRule& rule) {
  std::erase_if(from, [&](const NetRule& r) { return r.text == rule.text; });
  if (std::none_of(to.begin(), to.end(), [&](const NetRule& r) { return r.text == rule.text; })) {
    to.push_back(rule);
  }
}

}  // namespace

std::string NetInjectPath(const std::string& sandbox);

namespace {

// The secrets ss-net puts in for the sandbox, each with its placeholder (written by
// ApplyNetInjections as a policy that holds only them).
std::vector<NetInjection> LoadInjections(const std::string& sandbox) {
  auto text = ReadFileIfExists(NetInjectPath(sandbox));
  if (!text) return {};
  return NetPolicyFromJson(*text).inject;
}

}  // namespace

std::string SandboxNetDir(const std::string& sandbox) {
  return Cat(SandboxesDir(), "/", sandbox, "/net");
}
std::string NetPolicyPath(const std::string& sandbox) {
  return SandboxNetDir(sandbox) + "/policy.json";
}
std::string NetLogPath(const std::string& sandbox) { return SandboxNetDir(sandbox) + "/log.jsonl"; }
std::string NetChangesPath(const std::string& sandbox) {
  return SandboxNetDir(sandbox) + "/changes.json";
}
std::string NetInjectPath(const std::string& sandbox) {
  return SandboxNetDir(sandbox) + "/inject.json";
}

NetPolicy ConfiguredNetPolicy(const std::string& sandbox) {
  Config config = Config::Load();
  auto list = [&](const char* field) {
    std::vector<std::string> out;
    for (const auto& item : config.SandboxValue(sandbox, field)) {
      out.push_back(item.get<std::string>());
    }
    return out;
  };
  NetPolicy policy;
  policy.mode = ParseNetMode(config.SandboxValue(sandbox, "network.mode").get<std::string>())
                    .value_or(NetMode::kAllowlist);
  NetPresetContext context = PresetContext(sandbox);
  for (const std::string& preset : list("network.presets")) {
    for (const NetRule& rule : NetPresetRules(preset, context).value_or(std::vector<NetRule>{})) {
      Move(policy.allow, policy.deny, rule);
    }
  }
  for (const std::string& rule : list("network.allow")) {
    Move(policy.allow, policy.deny, ParseNetRule(rule));
  }
  for (const std::string& rule : list("network.deny")) {
    Move(policy.deny, policy.allow, ParseNetRule(rule));
  }
  return policy;
}

NetPolicy LoadNetPolicy(const std::string& sandbox) {
  NetPolicy policy = ConfiguredNetPolicy(sandbox);
  policy.inject = LoadInjections(sandbox);
  for (const auto& change : LoadChanges(sandbox)) {
    if (!change.is_object() || change.size() != 1 || !change.begin()->is_string()) continue;
    const std::string& verb = change.begin().key();
    const std::string value = change.begin()->get<std::string>();
    if (verb == "allow") Move(policy.allow, policy.deny, ParseNetRule(value));
    if (verb == "deny") Move(policy.deny, policy.allow, ParseNetRule(value));
    if (verb == "mode") policy.mode = ParseNetMode(value).value_or(policy.mode);
  }
  return policy;
}

void ChangeNetPolicy(const std::string& sandbox, const std::string& verb,
                     const std::vector<std::string>& values) {
  nlohmann::json changes = LoadChanges(sandbox);
  for (const std::string& value : values) {
    // A rule's last word counts, and the last mode: earlier ones go.
    std::string key = verb == "mode" ? value : ParseNetRule(value).text;
    changes.erase(std::remove_if(changes.begin(), changes.end(),
                                 [&](const nlohmann::json& c) {
                                   if (!c.is_object() || c.size() != 1) return true;
                                   if (verb == "mode") return c.contains("mode");
                                   return !c.contains("mode") && c.begin()->is_string() &&
                                          c.begin()->get<std::string>() == key;
                                 }),
                  changes.end());
    changes.push_back({{verb, key}});
  }
  MakeDirs(SandboxNetDir(sandbox), 0700);
  AtomicWrite(NetChangesPath(sandbox), changes.dump(2) + "\n", 0600);
  WriteNetPolicy(sandbox);
}

std::vector<std::pair<std::string, std::string>> ApplyNetInjections(
    const std::string& sandbox, std::vector<NetInjection> wanted) {
  MakeDirs(SandboxNetDir(sandbox), 0700);
  FileLock lock(SandboxNetDir(sandbox) + "/.inject.lock");
  std::vector<NetInjection> had = LoadInjections(sandbox);
  std::vector<std::pair<std::string, std::string>> out;
  for (NetInjection& w : wanted) {
    w.placeholder.clear();
    for (const NetInjection& h : had) {
      if (h.secret == w.secret) w.placeholder = h.placeholder;
    }
    if (w.placeholder.empty()) w.placeholder = Cat("ss-placeholder-", RandomNonce(), RandomNonce());
    out.emplace_back(w.secret, w.placeholder);
  }
  NetPolicy record;
  record.inject = std::move(wanted);
  std::string text = NetPolicyToJson(record);
  if (ReadFileIfExists(NetInjectPath(sandbox)) != text) {
    AtomicWrite(NetInjectPath(sandbox), text, 0600);
  }
  WriteNetPolicy(sandbox);
  return out;
}

bool WriteNetPolicy(const std::string& sandbox) {
  std::string text = NetPolicyToJson(LoadNetPolicy(sandbox));
  if (ReadFileIfExists(NetPolicyPath(sandbox)) == text) return false;
  MakeDirs(SandboxNetDir(sandbox), 0700);
  AtomicWrite(NetPolicyPath(sandbox), text, 0600);
  return true;
}

}  // namespace ss
