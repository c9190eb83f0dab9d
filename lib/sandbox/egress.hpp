// A sandbox's way out, kept on the host while the sandbox lives: its ss-net (the proxy and
// resolver, one process per sandbox) and the fence that sends the sandbox's traffic there
// (net_fence.hpp). The backend says where the sandbox's link is; this file keeps the two running.
//
// The fence is installed with the first start and stays until the sandbox is deleted: when
// ss-net is not running, the sandbox reaches nothing. ss-net is started again whenever ss finds
// it gone (every start and every session asks), on new ports, and the fence follows them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net_fence.hpp"

namespace ss {

struct EgressState {
  bool fenced = false;
  // What fences it: "nftables", or "backend" (a link without an interface: the backend's own,
  // such as QEMU's restricted user network).
  std::string fence;
  int pid = 0;        // the running ss-net, or 0
  std::string proxy;  // where the sandbox's HTTP(S)_PROXY points: "http://GATEWAY:3128"
};

// Which of ss-net's listeners a relay connects to.
enum class EgressService { kProxy, kDns };

// The loopback port of the sandbox's running ss-net for `service`; nothing when ss-net does not
// run (a relay then refuses the connection: the sandbox reaches nothing). Read afresh for every
// connection, since ss-net may have been started again on other ports.
std::optional<int> EgressLoopbackPort(const std::string& sandbox, EgressService service);

// Starts the sandbox's ss-net unless it runs, and installs the fence for its ports. Throws
// ss::Error (69) when either cannot be done: a sandbox is never left with an open network.
EgressState EnsureEgress(const std::string& sandbox, const EgressLink& link);

EgressState GetEgressState(const std::string& sandbox);

// The environment that points a session's programs at the sandbox's proxy (HTTP(S)_PROXY and
// their lower-case forms, NO_PROXY, NODE_USE_ENV_PROXY for Node's own fetch); empty for a
// sandbox whose ss-net never ran. Programs that ignore it are intercepted all the same.
std::vector<std::pair<std::string, std::string>> SandboxProxyEnv(const std::string& sandbox);

// Whether the sandbox was fenced and its ss-net is gone (a check of a pid: cheap enough for
// every command, which then restarts it through the backend).
bool EgressServerGone(const std::string& sandbox);

// Stops ss-net; the fence stays (the sandbox, if it runs on, reaches nothing).
void StopEgress(const std::string& sandbox);

// Stops ss-net and removes the fence (the sandbox is being deleted).
void RemoveEgress(const std::string& sandbox);

}  // namespace ss
