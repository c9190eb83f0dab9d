#include "net_store.hpp"

#include <nlohmann/json.hpp>

#include "fs.hpp"
#include "image.hpp"
#include "net_presets.hpp"
#include "sandbox.hpp"
#include "ssh_command.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// What the presets read: the image the sandbox was made from (its record names it), else the
// newest image built here, else the defaults the image build uses.
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
  }
  return c;
}

}  // namespace

std::string SandboxNetDir(const std::string& sandbox) {
  return Cat(SandboxesDir(), "/", sandbox, "/net");
}
std::string NetPolicyPath(const std::string& sandbox) {
  return SandboxNetDir(sandbox) + "/policy.json";
}
std::string NetLogPath(const std::string& sandbox) { return SandboxNetDir(sandbox) + "/log.jsonl"; }

NetPolicy LoadNetPolicy(const std::string& sandbox) {
  auto text = ReadFileIfExists(NetPolicyPath(sandbox));
  if (!text) return DefaultNetPolicy(PresetContext(sandbox));
  return NetPolicyFromJson(*text);
}

std::vector<std::pair<std::string, std::string>> ApplyNetInjections(
    const std::string& sandbox, std::vector<NetInjection> wanted) {
  MakeDirs(SandboxNetDir(sandbox), 0700);
  FileLock lock(SandboxNetDir(sandbox) + "/.inject.lock");
  NetPolicy policy = LoadNetPolicy(sandbox);
  std::string before = PathExists(NetPolicyPath(sandbox)) ? NetPolicyToJson(policy) : "";
  std::vector<std::pair<std::string, std::string>> out;
  for (NetInjection& w : wanted) {
    w.placeholder.clear();
    for (const NetInjection& had : policy.inject) {
      if (had.secret == w.secret) w.placeholder = had.placeholder;
    }
    if (w.placeholder.empty()) w.placeholder = Cat("ss-placeholder-", RandomNonce(), RandomNonce());
    out.emplace_back(w.secret, w.placeholder);
  }
  policy.inject = std::move(wanted);
  if (NetPolicyToJson(policy) != before) SaveNetPolicy(sandbox, policy);
  return out;
}

void SaveNetPolicy(const std::string& sandbox, const NetPolicy& policy) {
  MakeDirs(SandboxNetDir(sandbox), 0700);
  AtomicWrite(NetPolicyPath(sandbox), NetPolicyToJson(policy), 0600);
}

}  // namespace ss
