// HTTP with libcurl: the npm registry (image builds), the release feed (updates), Chrome's
// DevTools /json/version, and HTTP APIs on unix sockets (LXD, Lume).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ss {

struct HttpRequest {
  std::string url;
  std::string method = "GET";
  std::vector<std::string> headers;  // "Accept: application/json"
  std::string body;
  std::string unix_socket;  // talk HTTP over this socket instead of TCP
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds connect_timeout{5000};
  bool no_proxy = false;  // never through a proxy (loopback checks), whatever the environment says
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// Throws ss::Error(69) when the server cannot be reached at all; any HTTP status is returned.
HttpResponse HttpFetch(const HttpRequest& request);

// Downloads url to path (written atomically), following redirects; throws on a non-2xx status.
// Returns the number of bytes written.
int64_t HttpDownload(const std::string& url, const std::string& path,
                     std::chrono::milliseconds timeout = std::chrono::minutes(10));

}  // namespace ss
