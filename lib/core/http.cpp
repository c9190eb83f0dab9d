#include "http.hpp"

#include <curl/curl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// libcurl is loaded when the first request is made, not when a binary starts: it pulls in some
// twenty shared libraries, which would add ~10 ms to every `ss` command that never speaks HTTP.
struct Curl {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

const Curl& Api() {
  static const Curl api = [] {
    void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      throw Error(kExitUnavailable, Cat("cannot load libcurl: ", ::dlerror()), {},
                  {"install it: apt-get install libcurl4"});
    }
    auto sym = [lib](const char* name) {
      void* p = ::dlsym(lib, name);
      if (!p) throw Error(kExitUnavailable, Cat("libcurl has no ", name));
      return p;
    };
    Curl c;
    c.global_init = reinterpret_cast<decltype(c.global_init)>(sym("curl_global_init"));
    c.easy_init = reinterpret_cast<decltype(c.easy_init)>(sym("curl_easy_init"));
    c.easy_cleanup = reinterpret_cast<decltype(c.easy_cleanup)>(sym("curl_easy_cleanup"));
    c.easy_setopt = reinterpret_cast<decltype(c.easy_setopt)>(sym("curl_easy_setopt"));
    c.easy_perform = reinterpret_cast<decltype(c.easy_perform)>(sym("curl_easy_perform"));
    c.easy_getinfo = reinterpret_cast<decltype(c.easy_getinfo)>(sym("curl_easy_getinfo"));
    c.easy_strerror = reinterpret_cast<decltype(c.easy_strerror)>(sym("curl_easy_strerror"));
    c.slist_append = reinterpret_cast<decltype(c.slist_append)>(sym("curl_slist_append"));
    c.slist_free_all = reinterpret_cast<decltype(c.slist_free_all)>(sym("curl_slist_free_all"));
    c.global_init(CURL_GLOBAL_DEFAULT);
    return c;
  }();
  return api;
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

struct EasyDeleter {
  void operator()(CURL* c) const { Api().easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { Api().slist_free_all(l); }
};
using CurlPtr = std::unique_ptr<CURL, EasyDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

CurlPtr NewHandle(const std::string& url, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds connect_timeout) {
  CurlPtr curl(Api().easy_init());
  if (!curl) throw Error(kExitSoftware, "cannot initialise libcurl");
  Api().easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  Api().easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  Api().easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
  Api().easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  Api().easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  Api().easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS,
                    static_cast<long>(connect_timeout.count()));
  Api().easy_setopt(curl.get(), CURLOPT_USERAGENT, "ss");
  Api().easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  return curl;
}

[[noreturn]] void Fail(const std::string& url, CURLcode code, const char* errbuf) {
  throw Error(kExitUnavailable,
              Cat("cannot reach ", url, ": ", *errbuf ? errbuf : Api().easy_strerror(code)));
}

}  // namespace

HttpResponse HttpFetch(const HttpRequest& request) {
  CurlPtr curl = NewHandle(request.url, request.timeout, request.connect_timeout);
  SlistPtr headers;
  for (const auto& h : request.headers) {
    headers.reset(Api().slist_append(headers.release(), h.c_str()));
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  HttpResponse response;
  Api().easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  Api().easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  Api().easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &AppendToString);
  Api().easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response.body);
  Api().easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    Api().easy_setopt(curl.get(), CURLOPT_POSTFIELDS, request.body.c_str());
    Api().easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE,
                      static_cast<curl_off_t>(request.body.size()));
  }
  if (!request.unix_socket.empty()) {
    Api().easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, request.unix_socket.c_str());
  }
  if (request.no_proxy) Api().easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
  Debug(Cat("http: ", request.method, " ", request.url));
  CURLcode rc = Api().easy_perform(curl.get());
  if (rc != CURLE_OK) Fail(request.url, rc, errbuf);
  Api().easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

int64_t HttpDownload(const std::string& url, const std::string& path,
                     std::chrono::milliseconds timeout) {
  std::string tmp = Cat(path, ".part");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(kExitIoErr, Cat("cannot create '", tmp, "': ", std::strerror(errno)));
  CurlPtr curl = NewHandle(url, timeout, std::chrono::seconds(10));
  char errbuf[CURL_ERROR_SIZE] = "";
  Api().easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, errbuf);
  Api().easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, &WriteToFd);
  Api().easy_setopt(curl.get(), CURLOPT_WRITEDATA, &fd);
  Api().easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  Debug(Cat("http: download ", url));
  CURLcode rc = Api().easy_perform(curl.get());
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (rc != CURLE_OK || !synced) {
    ::unlink(tmp.c_str());
    if (rc == CURLE_OK) throw Error(kExitIoErr, Cat("cannot write '", tmp, "'"));
    Fail(url, rc, errbuf);
  }
  curl_off_t size = 0;
  Api().easy_getinfo(curl.get(), CURLINFO_SIZE_DOWNLOAD_T, &size);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(kExitIoErr, Cat("cannot replace '", path, "': ", std::strerror(errno)));
  }
  return static_cast<int64_t>(size);
}

}  // namespace ss
