#include "http.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t AppendToString(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t WriteToFd(char* data, size_t size, size_t n, void* fd_ptr) {
  int fd = *static_cast<int*>(fd_ptr);
  size_t total = size * n;
  size_t done = 0;
  while (done < total) {
    ssize_t w = ::write(fd, data + done, total - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return 0;  // makes curl fail with CURLE_WRITE_ERROR
    }
    done += static_cast<size_t>(w);
  }
  return total;
}

using CurlPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using SlistPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

CurlPtr NewHandle(const std::string& url, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds connect_timeout) {
  GlobalInit();
  CurlPtr curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw Error(kExitSoftware, "cannot initialise libcurl");
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(connect_timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "ss");
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  return curl;
}

[[noreturn]] void Fail(const std::string& url, CURLcode code, const char* errbuf) {
  throw Error(kExitUnavailable,
              Cat("cannot reach ", url, ": ", *errbuf ? errbuf : curl_easy_strerror(code)));
}

}  // namespace

HttpResponse HttpFetch(const HttpRequest& request) {
  CurlPtr curl = NewHandle(request.url, request.timeout, request.connect_timeout);
  SlistPtr headers(nullptr, &curl_slist_free_all);
  for (const auto& h : request.headers) {
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  HttpResponse response;
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &AppendToString);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  if (!request.unix_socket.empty()) {
    curl_easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, request.unix_socket.c_str());
  }
  if (request.no_proxy) curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
  Debug(Cat("http: ", request.method, " ", request.url));
  CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) Fail(request.url, rc, errbuf);
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

int64_t HttpDownload(const std::string& url, const std::string& path,
                     std::chrono::milliseconds timeout) {
  std::string tmp = Cat(path, ".part");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(kExitIoErr, Cat("cannot create '", tmp, "': ", std::strerror(errno)));
  CurlPtr curl = NewHandle(url, timeout, std::chrono::seconds(10));
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &WriteToFd);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &fd);
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  Debug(Cat("http: download ", url));
  CURLcode rc = curl_easy_perform(curl.get());
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (rc != CURLE_OK || !synced) {
    ::unlink(tmp.c_str());
    if (rc == CURLE_OK) throw Error(kExitIoErr, Cat("cannot write '", tmp, "'"));
    Fail(url, rc, errbuf);
  }
  curl_off_t size = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_SIZE_DOWNLOAD_T, &size);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(kExitIoErr, Cat("cannot replace '", path, "': ", std::strerror(errno)));
  }
  return static_cast<int64_t>(size);
}

}  // namespace ss
