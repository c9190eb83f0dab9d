#include "dns_wire.hpp"

#include "strings.hpp"

namespace ss {
namespace {

constexpr size_t kHeader = 12;

uint16_t Get16(std::string_view m, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(m[at]) << 8) |
                               static_cast<uint8_t>(m[at + 1]));
}

}  // namespace

std::optional<DnsQuestion> ParseDnsQuery(std::string_view m) {
  if (m.size() < kHeader) return std::nullopt;
  uint16_t flags = Get16(m, 2);
  bool response = flags & 0x8000;
  int opcode = (flags >> 11) & 0xf;
  if (response || opcode != 0 || Get16(m, 4) != 1 || Get16(m, 6) != 0 || Get16(m, 8) != 0) {
    return std::nullopt;
  }
  DnsQuestion q;
  q.id = Get16(m, 0);
  size_t at = kHeader;
  std::string name;
  for (;;) {
    if (at >= m.size()) return std::nullopt;
    auto len = static_cast<uint8_t>(m[at++]);
    if (len == 0) break;
    if (len > 63 || at + len > m.size()) return std::nullopt;  // also refuses compression
    std::string_view label = m.substr(at, len);
    // A label may hold any byte, a '.' included; a name with one that a host name cannot hold
    // is one no policy allows, and is logged visibly.
    if (!OnlyChars(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")) {
      q.host_name = false;
    }
    if (!name.empty()) name += '.';
    name.append(label);
    if (name.size() > 253) return std::nullopt;
    at += len;
  }
  if (at + 4 > m.size()) return std::nullopt;
  q.name = q.host_name ? ToLower(name) : Printable(name);
  q.type = Get16(m, at);
  q.klass = Get16(m, at + 2);
  q.end = at + 4;
  return q;
}

std::string DnsReply(std::string_view query, const DnsQuestion& q, int rcode) {
  std::string r(query.substr(0, q.end));
  uint16_t flags = Get16(query, 2);
  // QR, the query's opcode and RD, RA; no AA, no TC, no data.
  flags =
      static_cast<uint16_t>(0x8000 | (flags & 0x7800) | (flags & 0x0100) | 0x0080 | (rcode & 0xf));
  r[2] = static_cast<char>(flags >> 8);
  r[3] = static_cast<char>(flags & 0xff);
  for (size_t i = 6; i < kHeader; ++i) r[i] = 0;  // no answers, authorities or additionals
  return r;
}

bool DnsAnswers(std::string_view answer, std::string_view query, const DnsQuestion& q) {
  return answer.size() >= q.end && Get16(answer, 0) == q.id && (Get16(answer, 2) & 0x8000) &&
         Get16(answer, 4) == 1 &&
         answer.substr(kHeader, q.end - kHeader) == query.substr(kHeader, q.end - kHeader);
}

std::string DnsQuery(uint16_t id, std::string_view name, uint16_t type) {
  std::string m;
  auto put16 = [&](uint16_t v) {
    m += static_cast<char>(v >> 8);
    m += static_cast<char>(v & 0xff);
  };
  put16(id);
  put16(0x0100);  // RD
  put16(1);
  put16(0);
  put16(0);
  put16(0);
  for (const std::string& label : Split(name, '.')) {
    m += static_cast<char>(label.size());
    m += label;
  }
  m += '\0';
  put16(type);
  put16(1);  // IN
  return m;
}

namespace {

// Skips a (possibly compressed) name at `at`; false when it runs past the end.
bool SkipName(std::string_view m, size_t& at) {
  for (int labels = 0; labels < 128; ++labels) {
    if (at >= m.size()) return false;
    auto len = static_cast<uint8_t>(m[at]);
    if ((len & 0xc0) == 0xc0) {
      at += 2;
      return at <= m.size();
    }
    if (len & 0xc0) return false;
    at += 1 + len;
    if (len == 0) return at <= m.size();
  }
  return false;
}

}  // namespace

std::vector<IpAddress> DnsAddresses(std::string_view m) {
  std::vector<IpAddress> out;
  if (m.size() < kHeader || !(Get16(m, 2) & 0x8000) || (Get16(m, 2) & 0xf) != 0) return out;
  size_t at = kHeader;
  for (uint16_t i = 0, n = Get16(m, 4); i < n; ++i) {
    if (!SkipName(m, at) || at + 4 > m.size()) return {};
    at += 4;
  }
  for (uint16_t i = 0, n = Get16(m, 6); i < n; ++i) {
    if (!SkipName(m, at) || at + 10 > m.size()) return {};
    uint16_t type = Get16(m, at);
    uint16_t klass = Get16(m, at + 2);
    uint16_t length = Get16(m, at + 8);
    at += 10;
    if (at + length > m.size()) return {};
    if (klass == 1 &&
        ((type == kDnsTypeA && length == 4) || (type == kDnsTypeAaaa && length == 16))) {
      out.push_back(*IpAddressFromBytes(m.substr(at, length)));
    }
    at += length;
  }
  return out;
}

bool CapDnsTtls(std::string& m, uint32_t most) {
  if (m.size() < kHeader) return false;
  size_t at = kHeader;
  for (uint16_t i = 0, n = Get16(m, 4); i < n; ++i) {
    if (!SkipName(m, at) || at + 4 > m.size()) return false;
    at += 4;
  }
  uint32_t records = uint32_t{Get16(m, 6)} + Get16(m, 8) + Get16(m, 10);
  for (uint32_t i = 0; i < records; ++i) {
    if (!SkipName(m, at) || at + 10 > m.size()) return false;
    uint16_t type = Get16(m, at);
    uint16_t length = Get16(m, at + 8);
    if (type != 41) {  // OPT (EDNS) keeps its own fields where a TTL would be
      uint32_t ttl = (uint32_t{Get16(m, at + 4)} << 16) | Get16(m, at + 6);
      if (ttl > most) {
        m[at + 4] = static_cast<char>(most >> 24);
        m[at + 5] = static_cast<char>(most >> 16);
        m[at + 6] = static_cast<char>(most >> 8);
        m[at + 7] = static_cast<char>(most);
      }
    }
    at += 10;
    if (at + length > m.size()) return false;
    at += length;
  }
  return true;
}

std::string DnsTypeName(uint16_t type) {
  switch (type) {
    case kDnsTypeA:
      return "A";
    case kDnsTypeCname:
      return "CNAME";
    case kDnsTypeTxt:
      return "TXT";
    case kDnsTypeAaaa:
      return "AAAA";
    case kDnsTypeSvcb:
      return "SVCB";
    case kDnsTypeHttps:
      return "HTTPS";
    case 15:
      return "MX";
    case 2:
      return "NS";
    case 12:
      return "PTR";
    case 255:
      return "ANY";
  }
  return Cat("TYPE", type);
}

}  // namespace ss
