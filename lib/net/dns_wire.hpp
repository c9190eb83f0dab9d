// The little of the DNS wire format (RFC 1035) that ss-net's resolver needs: read a query's one
// question, and make a reply that carries no data (NXDOMAIN, REFUSED, SERVFAIL). Allowed queries
// are relayed to the host's resolver as they are; nothing here trusts a length it has not checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ip_address.hpp"

namespace ss {

struct DnsQuestion {
  uint16_t id = 0;
  std::string name;       // lower case, dotted, no trailing dot ("" for the root)
  bool host_name = true;  // false: a label holds a byte no host name has (name shows it escaped)
  uint16_t type = 0;
  uint16_t klass = 0;
  size_t end = 0;  // offset just past the question in the message
};

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeCname = 5;
inline constexpr uint16_t kDnsTypeTxt = 16;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint16_t kDnsTypeSvcb = 64;
inline constexpr uint16_t kDnsTypeHttps = 65;

inline constexpr int kDnsNxDomain = 3;
inline constexpr int kDnsServFail = 2;
inline constexpr int kDnsRefused = 5;

// The question of a standard query (QR 0, opcode 0, exactly one question, no compression in it),
// or nothing for anything else.
std::optional<DnsQuestion> ParseDnsQuery(std::string_view message);

// A reply to `query` with `rcode` and the question echoed, nothing else.
std::string DnsReply(std::string_view query, const DnsQuestion& q, int rcode);

// Whether `answer` is a reply to `query` (whose question is `q`): same id, the same one question.
// What the upstream resolver returns is relayed only then.
bool DnsAnswers(std::string_view answer, std::string_view query, const DnsQuestion& q);

// A standard recursive query for `name` (a valid host name) of `type`, with `id`.
std::string DnsQuery(uint16_t id, std::string_view name, uint16_t type);

// The addresses of the A and AAAA records in the answer section of `answer`, in order, made by
// IpAddressFromBytes (an IPv4-mapped AAAA is the IPv4 address it maps); empty for a malformed
// answer or one with an error.
std::vector<IpAddress> DnsAddresses(std::string_view answer);

// Lowers every record's time to live in `answer` to at most `most` seconds (in place); false,
// and nothing trusted, for a malformed message.
bool CapDnsTtls(std::string& answer, uint32_t most);

// "A", "AAAA", "TXT", … or "TYPE<n>".
std::string DnsTypeName(uint16_t type);

}  // namespace ss
