#include "ssh.hpp"

#include <libssh/libssh.h>

#include <cstdlib>

#include "error.hpp"
#include "fd.hpp"
#include "net.hpp"
#include "output.hpp"
#include "ssh_forward.hpp"
#include "ssh_keys.hpp"
#include "ssh_mux.hpp"
#include "strings.hpp"

namespace ss {

struct SshConnection::SessionHandle {
  ssh_session s = ssh_new();
  ~SessionHandle() {
    if (s == nullptr) return;
    if (ssh_is_connected(s)) ssh_disconnect(s);
    ssh_free(s);
  }
};

namespace {

// libssh expands %-escapes in the known_hosts path.
std::string EscapePercent(const std::string& path) { return DoubleEvery(path, '%'); }

void SetOption(ssh_session s, ssh_options_e option, const void* value, const char* what) {
  if (ssh_options_set(s, option, value) != SSH_OK) {
    throw Error(kExitSoftware, Cat("cannot set the SSH option ", what, ": ", ssh_get_error(s)));
  }
}

std::string ServerKeyLine(ssh_session s) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(s, &key) != SSH_OK) return {};
  char* b64 = nullptr;
  std::string line;
  if (ssh_pki_export_pubkey_base64(key, &b64) == SSH_OK) {
    line = Cat(ssh_key_type_to_char(ssh_key_type(key)), " ", b64);
    ssh_string_free_char(b64);
  }
  ssh_key_free(key);
  return line;
}

std::string DescribeKey(const std::string& line) {
  if (line.empty()) return "an unreadable key";
  auto fields = Split(line, ' ');
  return Cat("the ", fields[0], " key ", KeyFingerprint(line));
}

}  // namespace

std::string SocketAddress::Describe() const {
  if (!socket_path.empty()) return socket_path;
  if (host.find(':') != std::string::npos) return Cat("[", host, "]:", port);
  return Cat(host, ":", port);
}

SshConnection::SshConnection(SshEndpoint endpoint, SshOptions options)
    : endpoint_(std::move(endpoint)),
      options_(std::move(options)),
      session_(std::make_unique<SessionHandle>()) {
  ssh_session s = session_->s;
  if (s == nullptr) throw Error(kExitSoftware, "cannot create an SSH session");
  const std::string where = Cat(endpoint_.host, ":", endpoint_.port);

  int no = 0, yes = 1;
  long seconds = static_cast<long>(options_.connect_timeout.count() / 1000);
  long usec = static_cast<long>(options_.connect_timeout.count() % 1000) * 1000;
  std::string known_hosts = EscapePercent(endpoint_.known_hosts_file);
  const char* trace = std::getenv("SS_TRACE");
  int verbosity = trace && *trace ? SSH_LOG_PROTOCOL : SSH_LOG_NOLOG;
  SetOption(s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity, "log verbosity");
  SetOption(s, SSH_OPTIONS_PROCESS_CONFIG, &no, "process config");  // no ~/.ssh/config
  SetOption(s, SSH_OPTIONS_HOST, endpoint_.host.c_str(), "host");
  SetOption(s, SSH_OPTIONS_PORT, &endpoint_.port, "port");
  SetOption(s, SSH_OPTIONS_USER, endpoint_.user.c_str(), "user");
  SetOption(s, SSH_OPTIONS_KNOWNHOSTS, known_hosts.c_str(), "known_hosts");
  std::string global_known_hosts = endpoint_.global_known_hosts_file.empty()
                                       ? std::string("/dev/null")
                                       : EscapePercent(endpoint_.global_known_hosts_file);
  SetOption(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, global_known_hosts.c_str(), "global known_hosts");
  SetOption(s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &yes, "strict host key checking");
  SetOption(s, SSH_OPTIONS_TIMEOUT, &seconds, "timeout");
  SetOption(s, SSH_OPTIONS_TIMEOUT_USEC, &usec, "timeout");
  SetOption(s, SSH_OPTIONS_NODELAY, &yes, "TCP_NODELAY");
  SetOption(s, SSH_OPTIONS_PASSWORD_AUTH, &no, "password authentication");
  SetOption(s, SSH_OPTIONS_KBDINT_AUTH, &no, "keyboard-interactive authentication");
  SetOption(s, SSH_OPTIONS_GSSAPI_AUTH, &no, "GSSAPI authentication");
  SetOption(s, SSH_OPTIONS_PUBKEY_AUTH, &yes, "public key authentication");

  if (options_.tcp_timeout.count() > 0) {
    Fd fd = TcpConnect(endpoint_.host, endpoint_.port, options_.tcp_timeout);
    if (!fd.ok()) {
      throw Error(kExitUnavailable, Cat("cannot connect to ", Subject(), " at ", where),
                  {Cat("  no TCP connection within ", options_.tcp_timeout.count(), " ms")});
    }
    socket_t raw = fd.get();
    SetOption(s, SSH_OPTIONS_FD, &raw, "socket");
    fd.Release();  // libssh closes it with the session
  }
  if (ssh_connect(s) != SSH_OK) {
    throw Error(kExitUnavailable, Cat("cannot connect to ", Subject(), " at ", where),
                {Cat("  ", ssh_get_error(s))});
  }

  // Host key: the pinned one or nothing.
  std::string offered = ServerKeyLine(s);
  std::string name = KnownHostsName(endpoint_.host, endpoint_.port);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      break;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      throw Error(kExitNoPerm, Cat("the host key of ", Subject(), " has changed: not connecting"),
                  {Cat("  ", where, " offered ", DescribeKey(offered)),
                   Cat("  the key pinned for ", name, " in ", endpoint_.known_hosts_file,
                       " is a different one")},
                  {options_.name.empty()
                       ? "if the host was re-installed, check its new fingerprint and replace the "
                         "key in known_hosts"
                       : "if the sandbox was re-created, provision it again to pin its new key",
                   "otherwise something may be intercepting the connection"});
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      if (options_.name.empty()) {
        // Not a sandbox: the user's own known_hosts decide, and ss never adds to them.
        throw Error(kExitNoPerm,
                    Cat("the host key of ", Subject(), " is not known: not connecting"),
                    {Cat("  ", where, " offered ", DescribeKey(offered)),
                     Cat("  ", endpoint_.known_hosts_file, " has no key for ", name)},
                    {"ss never trusts a key on first use: check the fingerprint and add the key "
                     "to known_hosts (for instance by connecting once with ssh)"});
      }
      throw Error(kExitNoPerm, Cat("the host key of ", Subject(), " is not pinned: not connecting"),
                  {Cat("  ", where, " offered ", DescribeKey(offered)),
                   Cat("  ", endpoint_.known_hosts_file, " has no key for ", name)},
                  {"ss pins a sandbox's host key when it provisions it and never trusts a key on "
                   "first use: provision the sandbox again"});
    case SSH_KNOWN_HOSTS_ERROR:
    default:
      throw Error(kExitNoPerm, Cat("cannot check the host key of ", Subject()),
                  {Cat("  ", ssh_get_error(s))});
  }

  // Authentication: the endpoint's key and nothing else.
  ssh_key key = nullptr;
  if (ssh_pki_import_privkey_file(endpoint_.identity_file.c_str(), nullptr, nullptr, nullptr,
                                  &key) != SSH_OK) {
    throw Error(kExitNoInput, Cat("cannot read the SSH key '", endpoint_.identity_file, "'"));
  }
  int auth = ssh_userauth_publickey(s, nullptr, key);
  ssh_key_free(key);
  if (auth == SSH_AUTH_ERROR) {
    // The connection broke during authentication (sshd restarting, say): not a refusal.
    throw Error(kExitUnavailable, Cat("lost the connection to ", Subject(), " while logging in"),
                {Cat("  ", ssh_get_error(s))});
  }
  if (auth != SSH_AUTH_SUCCESS) {
    throw AuthRefused(
        kExitNoPerm,
        Cat(Subject(), " refused the key '", endpoint_.identity_file, "' for user '",
            endpoint_.user, "'"),
        {Cat("  ", ssh_get_error(s))},
        {Cat("its public key must be in ~", endpoint_.user, "/.ssh/authorized_keys")});
  }

  ssh_detail::MuxOptions mux;
  mux.lost_message = options_.name.empty()
                         ? Cat("connection to '", endpoint_.user, "@", where, "' lost")
                         : Cat("connection to sandbox '", options_.name, "' lost");
  mux.keepalive_interval = options_.keepalive_interval;
  mux.keepalive_count_max = options_.keepalive_count_max;
  mux_ = std::make_unique<ssh_detail::Mux>(s, std::move(mux));
  forwards_ = std::make_unique<Forwards>(*mux_);
}

SshConnection::~SshConnection() = default;

const SshEndpoint& SshConnection::endpoint() const { return endpoint_; }

std::string SshConnection::Subject() const {
  if (!options_.name.empty()) return Cat("sandbox '", options_.name, "'");
  return Cat("'", endpoint_.user, "@", endpoint_.host, ":", endpoint_.port, "'");
}

void SshConnection::Run() { mux_->Run(); }

void SshConnection::RunUntil(const std::function<bool()>& done) { mux_->RunUntil(done); }

void SshConnection::Stop() { mux_->Stop(); }

size_t SshConnection::ChannelCount() const { return mux_->channel_count(); }

asio::io_context& SshConnection::io_context() { return mux_->io(); }

}  // namespace ss
