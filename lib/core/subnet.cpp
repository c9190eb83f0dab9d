#include "subnet.hpp"

#include <arpa/inet.h>

#include "json_out.hpp"
#include "output.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

uint32_t Mask(int prefix) { return prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix); }

// The JSON a command prints, or null when it cannot run or says nothing usable.
Json JsonOf(const std::vector<std::string>& argv) {
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  try {
    if (!FindInPath(argv[0])) return nullptr;
    ProcessResult r = Run(argv, o);
    if (!r.ok()) return nullptr;
    return Json::parse(r.out);
  } catch (const std::exception& e) {
    Debug(Cat("subnets: ", argv[0], ": ", e.what()));
    return nullptr;
  }
}

void Add(std::vector<Ipv4Net>& out, const Json& text) {
  if (!text.is_string()) return;
  if (auto net = ParseIpv4Net(text.get<std::string>())) out.push_back(*net);
}

}  // namespace

bool Ipv4Net::Overlaps(const Ipv4Net& other) const {
  uint32_t mask = Mask(std::min(prefix, other.prefix));
  return (address & mask) == (other.address & mask);
}

std::string Ipv4Net::ToString() const {
  return Cat(address >> 24, ".", (address >> 16) & 255, ".", (address >> 8) & 255, ".",
             address & 255, "/", prefix);
}

std::string Ipv4Net::GatewayCidr() const {
  Ipv4Net host{address + 1, prefix};
  return host.ToString();
}

std::optional<Ipv4Net> ParseIpv4Net(const std::string& text) {
  std::string addr = text;
  int prefix = 32;
  if (auto slash = text.find('/'); slash != std::string::npos) {
    addr = text.substr(0, slash);
    std::string p = text.substr(slash + 1);
    if (p.empty() || p.size() > 2 || p.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    prefix = std::stoi(p);
    if (prefix > 32) return std::nullopt;
  }
  in_addr a{};
  if (::inet_pton(AF_INET, addr.c_str(), &a) != 1) return std::nullopt;
  Ipv4Net net;
  net.prefix = prefix;
  net.address = ntohl(a.s_addr) & Mask(prefix);
  return net;
}

std::optional<Ipv4Net> FreeSubnet(const std::vector<Ipv4Net>& taken, uint32_t seed) {
  // The private ranges, as the number of /24s each holds past its first address.
  const std::pair<uint32_t, uint32_t> ranges[] = {{10u << 24, 1u << 16},
                                                  {(172u << 24) | (16u << 16), 1u << 12},
                                                  {(192u << 24) | (168u << 16), 1u << 8}};
  for (const auto& [base, count] : ranges) {
    // A walk through every /24 of the range from a seeded start, by a step coprime with the
    // count (a power of two): each is visited once.
    uint32_t step = 2 * (seed % 4093) + 1;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t index = (seed + i * step) % count;
      Ipv4Net candidate{base + (index << 8), 24};
      // Neither the range's first nor its last /24 (10.0.0.0/24 and 10.255.255.0/24 are the
      // ones most often taken by hand).
      if (index == 0 || index == count - 1) continue;
      bool free = true;
      for (const auto& t : taken) free = free && !t.Overlaps(candidate);
      if (free) return candidate;
    }
  }
  return std::nullopt;
}

std::vector<Ipv4Net> SubnetsInUse() {
  std::vector<Ipv4Net> out;
  Json routes = JsonOf({"ip", "-4", "-j", "route", "show", "table", "all"});
  if (routes.is_array()) {
    for (const auto& r : routes) {
      if (r.value("dst", "") != "default") Add(out, r.value("dst", Json()));
    }
  }
  Json links = JsonOf({"ip", "-4", "-j", "addr"});
  if (links.is_array()) {
    for (const auto& l : links) {
      for (const auto& a : l.value("addr_info", Json::array())) {
        if (a.contains("local") && a.contains("prefixlen")) {
          Add(out, Cat(a["local"].get<std::string>(), "/", a["prefixlen"].get<int>()));
        }
      }
    }
  }
  Json lxd = JsonOf({"lxc", "network", "list", "--format", "json"});
  if (lxd.is_array()) {
    for (const auto& n : lxd)
      Add(out, n.value("config", Json::object()).value("ipv4.address", Json()));
  }
  ProcessOptions o;
  o.timeout = std::chrono::seconds(10);
  if (FindInPath("docker")) {
    ProcessResult ids = Run({"docker", "network", "ls", "-q"}, o);
    if (ids.ok()) {
      std::vector<std::string> argv{"docker", "network", "inspect"};
      for (const auto& id : SplitLines(ids.out)) {
        if (!Trim(id).empty()) argv.emplace_back(Trim(id));
      }
      Json nets = argv.size() > 3 ? JsonOf(argv) : Json();
      if (nets.is_array()) {
        for (const auto& n : nets) {
          Json ipam = n.value("IPAM", Json::object()).value("Config", Json::array());
          if (!ipam.is_array()) continue;
          for (const auto& c : ipam) Add(out, c.value("Subnet", Json()));
        }
      }
    }
  }
  Json podman = JsonOf({"podman", "network", "ls", "--format", "json"});
  if (podman.is_array()) {
    for (const auto& n : podman) {
      for (const auto& s : n.value("subnets", Json::array())) Add(out, s.value("subnet", Json()));
    }
  }
  return out;
}

}  // namespace ss
