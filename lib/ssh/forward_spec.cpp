#include "forward_spec.hpp"

#include <netdb.h>
#include <sys/un.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

#include "error.hpp"
#include "strings.hpp"

namespace ss {
namespace {

struct Field {
  std::string arg;
  bool is_path = false;
};

// ${NAME} → the variable's value, as ssh's dollar_expand(); an unset variable is an error.
std::optional<std::string> ExpandVariables(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      size_t end = text.find('}', i + 2);
      if (end == std::string_view::npos) return std::nullopt;
      std::string name(text.substr(i + 2, end - i - 2));
      const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
      if (value == nullptr) return std::nullopt;
      out += value;
      i = end;
      continue;
    }
    out += text[i];
  }
  return out;
}

// One field, as ssh's parse_fwd_field(): "[literal]" or characters up to an unescaped ':'.
// Returns false on a malformed field; leaves `pos` after the field's ':' (or at the end).
bool NextField(const std::string& s, size_t& pos, Field& field) {
  field = Field{};
  if (s[pos] == '[') {
    size_t end = pos + 1;
    while (end < s.size() && s[end] != ']') {
      if (s[end] == '/') field.is_path = true;
      ++end;
    }
    if (end >= s.size() || (end + 1 < s.size() && s[end + 1] != ':')) return false;
    field.arg = s.substr(pos + 1, end - pos - 1);
    pos = std::min(end + 2, s.size());
    return true;
  }
  size_t i = pos;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\') {
      if (++i >= s.size()) return false;
      field.arg += s[i];
      continue;
    }
    if (c == '/') field.is_path = true;
    if (c == ':') {
      pos = i + 1;
      return true;
    }
    field.arg += c;
  }
  pos = s.size();
  return true;
}

// ssh's a2port(): 0-65535 or a TCP service name; -1 when neither.
int PortOf(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    if (s.size() > 5) return -1;
    int port = std::atoi(s.c_str());
    return port <= 65535 ? port : -1;
  }
  if (s.empty()) return -1;
  if (servent* se = ::getservbyname(s.c_str(), "tcp"))
    return ntohs(static_cast<uint16_t>(se->s_port));
  return -1;
}

SocketAddress Path(const std::string& path) {
  SocketAddress a;
  a.host.clear();
  a.socket_path = path;
  return a;
}

SocketAddress HostPort(const std::string& host, int port) {
  SocketAddress a;
  a.host = host;
  a.port = port;
  return a;
}

}  // namespace

ForwardSpec ParseForwardSpec(std::string_view text, ForwardDirection direction) {
  const bool remote = direction == ForwardDirection::kRemote;
  Error bad(kExitUsage,
            Cat("bad ", remote ? "remote" : "local", " forwarding specification '", text, "'"));
  bad.Hint(remote
               ? "use -R [bind_address:]port:host:hostport, -R [bind_address:]port:local_socket,"
                 " -R remote_socket:host:hostport or -R remote_socket:local_socket"
               : "use -L [bind_address:]port:host:hostport, -L [bind_address:]port:remote_socket,"
                 " -L local_socket:host:hostport or -L local_socket:remote_socket");
  std::optional<std::string> expanded = ExpandVariables(text);
  if (!expanded) throw bad;
  std::string s = *expanded;
  size_t start = s.find_first_not_of(" \t");
  if (start == std::string::npos) throw bad;

  // As in ssh, the end of the string ends the fields (so a trailing ':' is allowed), and more
  // than four is an error.
  std::vector<Field> fields;
  for (size_t pos = start; pos < s.size();) {
    if (fields.size() == 4) throw bad;
    Field f;
    if (!NextField(s, pos, f)) throw bad;
    fields.push_back(std::move(f));
  }

  ForwardSpec spec;
  spec.direction = direction;
  spec.text = std::string(text);
  int listen_port = -1, connect_port = -1;
  bool listen_path = false, connect_path = false;
  switch (fields.size()) {
    case 2:
      if (fields[0].is_path && fields[1].is_path) {
        spec.listen = Path(fields[0].arg);
        spec.target = Path(fields[1].arg);
        listen_path = connect_path = true;
      } else if (fields[1].is_path) {
        listen_port = PortOf(fields[0].arg);
        spec.listen = HostPort("", listen_port);
        spec.target = Path(fields[1].arg);
        connect_path = true;
      } else {
        throw bad;  // [bind:]port alone: a dynamic forward
      }
      break;
    case 3:
      if (fields[0].is_path) {
        spec.listen = Path(fields[0].arg);
        connect_port = PortOf(fields[2].arg);
        spec.target = HostPort(fields[1].arg, connect_port);
        listen_path = true;
      } else if (fields[2].is_path) {
        listen_port = PortOf(fields[1].arg);
        spec.listen = HostPort(fields[0].arg, listen_port);
        spec.listen_host_given = true;
        spec.target = Path(fields[2].arg);
        connect_path = true;
      } else {
        listen_port = PortOf(fields[0].arg);
        spec.listen = HostPort("", listen_port);
        connect_port = PortOf(fields[2].arg);
        spec.target = HostPort(fields[1].arg, connect_port);
      }
      break;
    case 4:
      listen_port = PortOf(fields[1].arg);
      spec.listen = HostPort(fields[0].arg, listen_port);
      spec.listen_host_given = true;
      connect_port = PortOf(fields[3].arg);
      spec.target = HostPort(fields[2].arg, connect_port);
      break;
    default:
      throw bad;
  }
  if (!connect_path && connect_port <= 0) throw bad;
  if (!listen_path && listen_port < 0) throw bad;
  if (!connect_path && (spec.target.host.empty() || spec.target.host.size() >= NI_MAXHOST)) {
    throw bad;
  }
  if (spec.listen.host.size() >= NI_MAXHOST) throw bad;
  for (const auto* path : {&spec.listen.socket_path, &spec.target.socket_path}) {
    if (path->size() >= sizeof(sockaddr_un::sun_path)) throw bad;
  }
  if ((listen_path && spec.listen.socket_path.empty()) ||
      (connect_path && spec.target.socket_path.empty())) {
    throw bad;
  }
  return spec;
}

std::string DescribeForward(const ForwardSpec& spec) {
  auto side = [](const SocketAddress& a) {
    if (!a.socket_path.empty()) return a.socket_path;
    std::string host = a.host.find(':') != std::string::npos ? Cat("[", a.host, "]") : a.host;
    return Cat(host, host.empty() ? "" : ":", a.port);
  };
  return Cat(spec.direction == ForwardDirection::kLocal ? "-L " : "-R ", side(spec.listen), ":",
             side(spec.target));
}

}  // namespace ss
