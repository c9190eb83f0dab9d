#include "net_inject.hpp"

#include "error.hpp"
#include "fs.hpp"
#include "net_ca.hpp"
#include "net_policy.hpp"
#include "net_store.hpp"
#include "strings.hpp"

namespace ss {

InjectedSecrets PrepareInjectedSecrets(const Config& config, const std::string& sandbox) {
  InjectedSecrets out;
  Json declared = config.SecretInjections(sandbox);
  if (declared.empty()) {
    // Injections once declared and now gone are taken out of the policy too.
    auto stored = ReadFileIfExists(NetPolicyPath(sandbox));
    if (stored && stored->find("\"inject\"") != std::string::npos) ApplyNetInjections(sandbox, {});
    return out;
  }
  std::vector<NetInjection> rules;
  for (const auto& [name, spec] : declared.items()) {
    NetInjection r;
    r.secret = name;
    for (const auto& host : spec["inject"]) {
      r.hosts.push_back(*NormaliseHostName(host.get<std::string>()));
    }
    r.from = SecretSourceFromJson(spec["from"]).value();  // checked when config.yaml was read
    if (spec.contains("headers")) {
      r.headers.clear();
      for (const auto& h : spec["headers"]) r.headers.push_back(ToLower(h.get<std::string>()));
    }
    rules.push_back(std::move(r));
  }
  for (auto& [name, placeholder] : ApplyNetInjections(sandbox, std::move(rules))) {
    out.names.push_back(name);
    out.env.emplace_back(name, placeholder);
  }
  // Node (and Claude Code, whose TLS store is read once at start) trust the CA from the
  // environment; most other programs from the system store.
  out.env.emplace_back("NODE_EXTRA_CA_CERTS", kSandboxCaPath);
  return out;
}

void TrustNetCa(SshConnection& conn) {
  NetCa ca = NetCa::LoadOrCreate();
  ExecResult have = conn.Exec({"cat", kSandboxCaPath});
  if (have.status == 0 && have.out == ca.cert_pem()) return;
  ExecOptions write;
  write.input = ca.cert_pem();
  ExecResult r = conn.Exec({"sudo", "-n", "tee", kSandboxCaPath}, write);
  if (r.status == 0) r = conn.Exec({"sudo", "-n", "update-ca-certificates"});
  if (r.status != 0) {
    throw Error(kExitUnavailable, "cannot install ss-net's CA certificate in the sandbox",
                {Trim(r.err).empty() ? Cat("exit status ", r.status) : std::string(Trim(r.err))},
                {"secrets declared with inject: need it; see ss-config(5)"});
  }
}

}  // namespace ss
