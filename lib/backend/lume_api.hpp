// Lume's HTTP API (`lume serve`, Lume 0.5; see the facts on Lume): the calls the Lume backend
// makes, each answered as Lume answers it (202 for what runs on in the server, 200 with an empty
// body for a delete, a 5 s wait in every stop), and the `lume` CLI's JSON when no server answers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "http.hpp"
#include "json_out.hpp"

namespace ss {

constexpr const char* kLumeInstallHint =
    "install Lume: https://github.com/trycua/cua/tree/main/libs/lume";

// The server ss talks to: $SS_LUME_URL, else Lume's own default, http://127.0.0.1:7777.
std::string LumeUrl();

// A directory of the host given to a Lume machine. Lume shares every one under one virtio-fs tag
// (kLumeShareTag), each as a folder named after its basename ("name (2)" for the second of a
// name).
struct LumeShare {
  std::string host_path;
  bool read_only = false;
};
constexpr const char* kLumeShareTag = "com.apple.virtio-fs.automount";
// The folder each share appears as under the tag, in order.
std::vector<std::string> LumeShareFolders(const std::vector<LumeShare>& shares);

// "8GB" as Lume reads sizes: whole MB, so that any size ss asks for is kept to the MiB.
std::string LumeSize(int64_t bytes);

class LumeApi {
 public:
  explicit LumeApi(std::string url) : url_(std::move(url)) {}
  const std::string& url() const { return url_; }

  // Whether a Lume server answers (GET /lume/host/status); its version in `version`.
  bool Answers(std::string* version = nullptr);
  // Every call starts Lume's server first when nothing answers (EnsureServer).

  // A machine's VMDetails, or nothing when Lume has no machine of that name. During an async
  // pull: {"status": "pulling", "downloadProgress": N}. A failed pull throws its message.
  std::optional<Json> Vm(const std::string& name);
  std::vector<Json> Vms();
  // Makes machine `name` from `image` (IMAGE[:TAG] of ghcr.io/trycua) in the background.
  void PullStart(const std::string& image, const std::string& name);
  void Set(const std::string& name, int cpus, int64_t memory, int64_t disk);
  void Run(const std::string& name, const std::vector<LumeShare>& shares);
  void Stop(const std::string& name);
  void Delete(const std::string& name);
  void Clone(const std::string& name, const std::string& new_name);

 private:
  // Starts `lume serve` on the URL's loopback port when nothing answers there (as the spec asks:
  // the server outlives ss, and Lume's machines run inside it), and waits for it. Throws
  // ss::Error(69) when it cannot.
  void EnsureServer();
  // One request, answered with any status; throws ss::Error(69) when no server answers even
  // after EnsureServer.
  HttpResponse Send(const std::string& method, const std::string& path, const Json& body,
                    std::chrono::milliseconds timeout = std::chrono::minutes(2));
  // The answer's JSON when its status is one of `ok`, else ss::Error(69) with Lume's message.
  static Json Expect(const HttpResponse& r, std::initializer_list<long> ok, std::string_view what);
  Json Call(const std::string& method, const std::string& path, const Json& body,
            std::initializer_list<long> ok, std::string_view what);
  std::string url_;
};

}  // namespace ss
