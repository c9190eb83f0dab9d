// Small network helpers.
#pragma once

#include <chrono>
#include <string>

namespace ss {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to 0 and released). Whoever gets it
// must be ready to pick another if it is taken before they bind it.
int FreeLoopbackPort();

// Whether something accepts TCP connections on host:port within `timeout`.
bool TcpPortOpen(const std::string& host, int port, std::chrono::milliseconds timeout);

}  // namespace ss
