#include "net_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "error.hpp"
#include "strings.hpp"

namespace ss {

std::string_view NetModeName(NetMode mode) {
  switch (mode) {
    case NetMode::kAllowlist:
      return "allowlist";
    case NetMode::kOpen:
      return "open";
    case NetMode::kNone:
      return "none";
  }
  return "allowlist";
}

std::optional<NetMode> ParseNetMode(std::string_view text) {
  for (NetMode m : {NetMode::kAllowlist, NetMode::kOpen, NetMode::kNone}) {
    if (text == NetModeName(m)) return m;
  }
  return std::nullopt;
}

std::optional<std::string> NormaliseHostName(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return std::nullopt;
  for (const std::string& label : Split(host, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return std::nullopt;
    }
    if (!OnlyChars(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")) {
      return std::nullopt;
    }
  }
  // Ends in a number (as the URL standard says): an IPv4 address in another form, not a name.
  std::string last = ToLower(host.substr(host.rfind('.') + 1));
  if (OnlyChars(last, "0123456789") ||
      (last.starts_with("0x") && OnlyChars(last.substr(2), "0123456789abcdef"))) {
    return std::nullopt;
  }
  return ToLower(host);
}

namespace {

[[noreturn]] void BadRule(std::string_view text, std::string why) {
  throw Error(kExitDataErr, Cat("invalid network rule ", Quoted(text), ": ", why), {},
              {"rules look like: example.com, *.example.com, example.com:443, 10.0.0.0/8, "
               "10.1.2.3:22, [2001:db8::]/32"});
}

bool InNetwork(const IpAddress& a, const IpAddress& net, int prefix) {
  return IpNetwork{net, prefix}.Contains(a);
}

bool Matches(const NetRule& rule, std::string_view name, const std::optional<IpAddress>& ip,
             int port) {
  if (rule.port != 0 && port != 0 && rule.port != port) return false;
  switch (rule.kind) {
    case NetRule::kName:
      return !ip && name == rule.name;
    case NetRule::kWildcard:
      return !ip && name.size() > rule.name.size() + 1 && name.ends_with(rule.name) &&
             name[name.size() - rule.name.size() - 1] == '.';
    case NetRule::kNetwork:
      return ip && InNetwork(*ip, rule.network, rule.prefix);
  }
  return false;
}

}  // namespace

NetRule ParseNetRule(std::string_view text) {
  NetRule r;
  std::string_view body = Trim(text);
  if (body.empty()) BadRule(text, "it is empty");
  // The port: after the last ':' of a name or IPv4 form, after "]:" of a bracketed IPv6 form.
  std::optional<std::string_view> port_text;
  if (body.front() == '[') {
    size_t close = body.find(']');
    if (close == std::string_view::npos) BadRule(text, "'[' without ']'");
    std::string_view after = body.substr(close + 1);
    if (after.starts_with(":")) {
      port_text = after.substr(1);
      body = body.substr(0, close + 1);
    } else if (after.starts_with("/")) {
      // [2001:db8::]/32
    } else if (!after.empty()) {
      BadRule(text, "unexpected text after ']'");
    }
  } else if (std::count(body.begin(), body.end(), ':') == 1) {
    size_t colon = body.find(':');
    port_text = body.substr(colon + 1);
    body = body.substr(0, colon);
  } else if (std::count(body.begin(), body.end(), ':') > 1) {
    BadRule(text, "write an IPv6 address in brackets: [2001:db8::1]");
  }
  if (port_text) {
    auto port = ParseDecimal(*port_text);
    if (!port || *port < 1 || *port > 65535) BadRule(text, "the port must be 1-65535");
    r.port = static_cast<int>(*port);
  }
  size_t slash = body.find('/');
  std::string_view address = body.substr(0, slash);
  if (auto ip = ParseIpAddress(address)) {
    r.kind = NetRule::kNetwork;
    r.network = *ip;
    r.prefix = ip->family == 4 ? 32 : 128;
    if (slash != std::string_view::npos) {
      auto prefix = ParseDecimal(body.substr(slash + 1));
      if (!prefix || *prefix < 0 || *prefix > r.prefix) {
        BadRule(text, Cat("the prefix length must be 0-", r.prefix));
      }
      r.prefix = static_cast<int>(*prefix);
    }
    // Keep the network's own address: 10.1.2.3/8 means 10.0.0.0/8.
    r.network = IpNetwork::Of(*ip, r.prefix).address;
    std::string shown =
        r.network.family == 6 ? Cat("[", r.network.ToString(), "]") : r.network.ToString();
    if (r.prefix != (ip->family == 4 ? 32 : 128)) shown += Cat("/", r.prefix);
    r.text = r.port ? Cat(shown, ":", r.port) : shown;
    return r;
  }
  if (slash != std::string_view::npos) BadRule(text, "a prefix length needs an IP address");
  if (address.starts_with("*.")) {
    r.kind = NetRule::kWildcard;
    address.remove_prefix(2);
  }
  if (address.find('*') != std::string_view::npos) {
    BadRule(text, "'*' only as the whole first label: *.example.com");
  }
  auto name = NormaliseHostName(address);
  if (!name) BadRule(text, "not a host name, address or network");
  r.name = *name;
  std::string shown = r.kind == NetRule::kWildcard ? Cat("*.", r.name) : r.name;
  r.text = r.port ? Cat(shown, ":", r.port) : shown;
  return r;
}

std::string NetPolicyToJson(const NetPolicy& policy) {
  nlohmann::json j = {{"mode", NetModeName(policy.mode)},
                      {"allow", nlohmann::json::array()},
                      {"deny", nlohmann::json::array()}};
  for (const NetRule& r : policy.allow) j["allow"].push_back(r.text);
  for (const NetRule& r : policy.deny) j["deny"].push_back(r.text);
  for (const NetInjection& i : policy.inject) {
    nlohmann::json rule = {{"secret", i.secret},
                           {"placeholder", i.placeholder},
                           {"hosts", i.hosts},
                           {"from", SecretSourceToJson(i.from)},
                           {"headers", i.headers}};
    j["inject"].push_back(rule);
  }
  return j.dump(2) + "\n";
}

namespace {

bool IsEnvName(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// A placeholder is searched for in header values: long enough never to occur by chance, and
// made of characters a header value carries unchanged.
bool IsPlaceholder(std::string_view s) {
  if (s.size() < 16 || s.size() > 200) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

}  // namespace

std::vector<std::string> DefaultInjectHeaders() { return {"authorization", "x-api-key"}; }

bool IsHeaderName(std::string_view s) {
  return !s.empty() && s.size() <= 100 &&
         OnlyChars(s,
                   "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

std::optional<NetSecretSource> SecretSourceFromJson(const nlohmann::json& from) {
  if (!from.is_object() || from.size() != 1) return std::nullopt;
  NetSecretSource s;
  if (from.contains("env") && from["env"].is_string() &&
      IsEnvName(from["env"].get<std::string>())) {
    s.kind = NetSecretSource::kEnv;
    s.env = from["env"].get<std::string>();
  } else if (from.contains("file") && from["file"].is_string() &&
             from["file"].get<std::string>().starts_with("/")) {
    s.kind = NetSecretSource::kFile;
    s.file = from["file"].get<std::string>();
  } else if (from.contains("command") && from["command"].is_array() && !from["command"].empty() &&
             std::all_of(from["command"].begin(), from["command"].end(),
                         [](const nlohmann::json& w) { return w.is_string(); })) {
    s.kind = NetSecretSource::kCommand;
    for (const auto& w : from["command"]) s.command.push_back(w.get<std::string>());
  } else {
    return std::nullopt;
  }
  return s;
}

nlohmann::json SecretSourceToJson(const NetSecretSource& from) {
  switch (from.kind) {
    case NetSecretSource::kFile:
      return {{"file", from.file}};
    case NetSecretSource::kCommand:
      return {{"command", from.command}};
    case NetSecretSource::kEnv:
      break;
  }
  return {{"env", from.env}};
}

namespace {

NetInjection ParseInjection(const nlohmann::json& j, const std::function<Error(std::string)>& bad) {
  if (!j.is_object()) throw bad("\"inject\" holds an entry that is not an object");
  NetInjection i;
  auto text = [&](const char* key) -> std::string {
    if (!j.contains(key) || !j[key].is_string())
      throw bad(Cat("an injection has no \"", key, "\""));
    return j[key].get<std::string>();
  };
  i.secret = text("secret");
  if (!IsEnvName(i.secret)) throw bad(Cat(Quoted(i.secret), " is not a secret's name"));
  i.placeholder = text("placeholder");
  if (!IsPlaceholder(i.placeholder)) {
    throw bad(Cat("the placeholder of ", i.secret,
                  " must be 16 to 200 letters, digits, '_', '-' or '.'"));
  }
  if (!j.contains("hosts") || !j["hosts"].is_array() || j["hosts"].empty()) {
    throw bad(Cat("the injection of ", i.secret, " needs \"hosts\", a list of names"));
  }
  for (const auto& h : j["hosts"]) {
    auto name = h.is_string() ? NormaliseHostName(h.get<std::string>()) : std::nullopt;
    if (!name || ParseIpAddress(*name)) {
      throw bad(Cat("the injection of ", i.secret, " names a host that is not a host name"));
    }
    i.hosts.push_back(*name);
  }
  auto from = j.contains("from") ? SecretSourceFromJson(j["from"]) : std::nullopt;
  if (!from) {
    throw bad(Cat("the injection of ", i.secret,
                  ": \"from\" is {\"env\": NAME}, {\"file\": ABSOLUTE-PATH} or "
                  "{\"command\": [PROGRAM, ARGS...]}"));
  }
  i.from = std::move(*from);
  if (j.contains("headers")) {  // policy files written before headers were named have none
    if (!j["headers"].is_array() || j["headers"].empty()) {
      throw bad(Cat("the injection of ", i.secret, " needs \"headers\", a list of header names"));
    }
    i.headers.clear();
    for (const auto& h : j["headers"]) {
      if (!h.is_string() || !IsHeaderName(h.get<std::string>())) {
        throw bad(Cat("the injection of ", i.secret, " names a header that is not a header name"));
      }
      i.headers.push_back(ToLower(h.get<std::string>()));
    }
  }
  return i;
}

}  // namespace

std::vector<const NetInjection*> InjectionsFor(const NetPolicy& policy, std::string_view host) {
  std::vector<const NetInjection*> out;
  for (const NetInjection& i : policy.inject) {
    if (std::find(i.hosts.begin(), i.hosts.end(), host) != i.hosts.end()) out.push_back(&i);
  }
  return out;
}

NetPolicy NetPolicyFromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [](std::string why) -> Error {
    return Error(kExitDataErr, Cat("invalid network policy: ", why));
  };
  if (!j.is_object()) throw bad("not a JSON object");
  NetPolicy policy;
  if (!j.contains("mode") || !j["mode"].is_string()) throw bad("no \"mode\"");
  auto mode = ParseNetMode(j["mode"].get<std::string>());
  if (!mode) throw bad("\"mode\" must be allowlist, open or none");
  policy.mode = *mode;
  for (const char* key : {"allow", "deny"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array()) throw bad(Cat("\"", key, "\" must be a list"));
    for (const auto& rule : j[key]) {
      if (!rule.is_string()) throw bad(Cat("\"", key, "\" holds a rule that is not a string"));
      (std::string_view(key) == "allow" ? policy.allow : policy.deny)
          .push_back(ParseNetRule(rule.get<std::string>()));
    }
  }
  if (j.contains("inject")) {
    if (!j["inject"].is_array()) throw bad("\"inject\" must be a list");
    std::function<Error(std::string)> why = bad;
    for (const auto& entry : j["inject"]) policy.inject.push_back(ParseInjection(entry, why));
    // One placeholder, one secret: none may hold another (the replacement would be ambiguous).
    for (const NetInjection& a : policy.inject) {
      for (const NetInjection& b : policy.inject) {
        if (&a != &b && a.placeholder.find(b.placeholder) != std::string::npos) {
          throw bad(Cat("the placeholders of ", a.secret, " and ", b.secret, " overlap"));
        }
      }
    }
  }
  return policy;
}

NetVerdict Decide(const NetPolicy& policy, std::string_view host, int port) {
  std::optional<IpAddress> ip = ParseIpAddress(host);
  std::string name;
  if (!ip) {
    auto normal = NormaliseHostName(host);
    if (!normal) return {false, "invalid name"};
    name = *normal;
  }
  if (policy.mode == NetMode::kNone) return {false, "mode none"};
  for (const NetRule& rule : policy.deny) {
    if (Matches(rule, name, ip, port)) return {false, Cat("deny ", rule.text)};
  }
  if (policy.mode == NetMode::kOpen) return {true, "mode open"};
  for (const NetRule& rule : policy.allow) {
    if (Matches(rule, name, ip, port)) return {true, Cat("allow ", rule.text)};
  }
  return {false, "mode allowlist"};
}

namespace {

std::vector<IpNetwork> Networks(std::initializer_list<const char*> texts) {
  std::vector<IpNetwork> out;
  for (const char* text : texts) out.push_back(*ParseIpNetwork(text));
  return out;
}

// The host's own, whatever its interfaces say: loopback, and "this host" (a connection to
// 0.0.0.0 or :: reaches the host's own listeners).
const std::vector<IpNetwork>& FixedOwn() {
  static const std::vector<IpNetwork> kOwn =
      Networks({"0.0.0.0/8", "127.0.0.0/8", "::/128", "::1/128"});
  return kOwn;
}

const std::vector<IpNetwork>& FixedInternal() {
  static const std::vector<IpNetwork> kInternal =
      Networks({"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
                "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/3", "::/127", "64:ff9b:1::/48",
                "fc00::/7", "fe80::/10", "ff00::/8"});
  return kInternal;
}

const HostNetwork* FindIn(const std::vector<HostNetwork>& networks, const IpAddress& a) {
  for (const HostNetwork& n : networks) {
    if (n.network.Contains(a)) return &n;
  }
  return nullptr;
}

// Whether an allow rule opens the internal address `a`: it names `a`, and all it names lies in
// an internal network that holds `a` (so 0.0.0.0/0 opens nothing internal).
bool Opened(const NetPolicy& policy, const IpAddress& a, int port, const HostNetworks& host) {
  std::vector<IpNetwork> around;
  for (const IpNetwork& n : FixedInternal()) {
    if (n.Contains(a)) around.push_back(n);
  }
  for (const HostNetwork& n : host.local) {
    if (n.network.Contains(a)) around.push_back(n.network);
  }
  for (const NetRule& rule : policy.allow) {
    if (!Matches(rule, "", a, port)) continue;
    IpNetwork named{rule.network, rule.prefix};
    for (const IpNetwork& n : around) {
      if (n.Covers(named)) return true;
    }
  }
  return false;
}

}  // namespace

bool IsInternalAddress(const IpAddress& address) {
  for (const IpNetwork& n : FixedInternal()) {
    if (n.Contains(address)) return true;
  }
  return false;
}

std::string NeverAllowed(const NetRule& rule, const HostNetworks& host) {
  if (rule.kind != NetRule::kNetwork) return "";
  const IpNetwork named = IpNetwork::Of(rule.network, rule.prefix);
  // A single address is also judged by the IPv4 addresses it carries, as connections are.
  std::vector<IpNetwork> views = {named};
  if (named.prefix == 128) {
    for (const IpAddress& v4 : EmbeddedIpv4(named.address)) views.push_back(IpNetwork::Single(v4));
  }
  for (const IpNetwork& n : views) {
    for (const IpNetwork& own : FixedOwn()) {
      if (own.Covers(n)) return "the host's own address";
    }
    for (const HostNetwork& own : host.own) {
      if (own.network.Covers(n)) return "the host's own address";
    }
    for (const HostNetwork& s : host.sandboxes) {
      if (s.network.Covers(n)) {
        return Cat("a sandbox network (", s.network.ToString(), " on ", s.interface, ")");
      }
    }
  }
  return "";
}

NetVerdict DecideAddress(const NetPolicy& policy, const IpAddress& address, int port,
                         const HostNetworks& host) {
  if (policy.mode == NetMode::kNone) return {false, "mode none"};
  // The address, and the IPv4 addresses it leads to: each is decided on.
  std::vector<IpAddress> views = {address};
  for (const IpAddress& v4 : EmbeddedIpv4(address)) views.push_back(v4);
  auto refused = [&](std::string rule, const IpAddress& a, std::string network = "") {
    return NetVerdict{false, std::move(rule), a.ToString(), std::move(network)};
  };
  for (const IpAddress& a : views) {
    for (const NetRule& rule : policy.deny) {
      if (Matches(rule, "", a, port)) return refused(Cat("deny ", rule.text), a);
    }
  }
  for (const IpAddress& a : views) {
    for (const IpNetwork& n : FixedOwn()) {
      if (n.Contains(a)) return refused("host address", a);
    }
    if (FindIn(host.own, a)) return refused("host address", a);
    if (const HostNetwork* n = FindIn(host.sandboxes, a)) {
      return refused("sandbox network", a, Cat(n->network.ToString(), " on ", n->interface));
    }
  }
  for (const IpAddress& a : views) {
    if ((IsInternalAddress(a) || FindIn(host.local, a)) && !Opened(policy, a, port, host)) {
      return refused("internal address", a);
    }
  }
  std::optional<IpAddress> ip = address;
  for (const NetRule& rule : policy.allow) {
    if (Matches(rule, "", ip, port)) return {true, Cat("allow ", rule.text)};
  }
  return {true, policy.mode == NetMode::kOpen ? "mode open" : "public address"};
}

}  // namespace ss
