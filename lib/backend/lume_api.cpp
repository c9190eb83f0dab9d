#include "lume_api.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <thread>

#include "error.hpp"
#include "fs.hpp"
#include "http.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "size.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kDefaultUrl = "http://127.0.0.1:7777";
constexpr std::chrono::seconds kServerStart{15};

// Lume's answer to a failed call: its {"message": ...}, else its text ("Not found").
std::string Message(const HttpResponse& r) {
  Json j = Json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  std::string text(Trim(r.body));
  return text.empty() ? Cat("HTTP ", r.status) : text;
}

bool SaysNotFound(const std::string& message) {
  std::string m = ToLower(message);
  return m.find("not found") != std::string::npos || m.find("does not exist") != std::string::npos;
}

// The CLI's JSON: an array, from the first line that starts one (Lume may log INFO lines to
// stdout before it).
std::optional<Json> CliJson(const std::vector<std::string>& args) {
  if (!FindInPath("lume")) return std::nullopt;
  std::vector<std::string> argv{"lume"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout = std::chrono::seconds(30);
  o.env = {{"LUME_LOG_LEVEL", "error"}};
  ProcessResult r = Run(argv, o);
  if (!r.ok()) return Json();  // null: the CLI answered no
  size_t start = 0;
  while (start < r.out.size() && r.out[start] != '[') {
    size_t eol = r.out.find('\n', start);
    if (eol == std::string::npos) return std::nullopt;
    start = eol + 1;
  }
  Json j = Json::parse(r.out.substr(start), nullptr, false);
  if (!j.is_array()) throw Error(kExitUnavailable, Cat("lume ", args[0], " printed no JSON array"));
  return j;
}

}  // namespace

std::string LumeUrl() {
  const char* url = std::getenv("SS_LUME_URL");
  return url && *url ? std::string(url) : kDefaultUrl;
}

std::vector<std::string> LumeShareFolders(const std::vector<LumeShare>& shares) {
  std::map<std::string, int> seen;
  std::vector<std::string> out;
  for (const auto& s : shares) {
    std::string path = s.host_path;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    std::string base = Basename(path);
    int n = ++seen[base];
    out.push_back(n == 1 ? base : Cat(base, " (", n, ")"));
  }
  return out;
}

std::string LumeSize(int64_t bytes) { return Cat((bytes + kMiB - 1) / kMiB, "MB"); }

bool LumeApi::Answers(std::string* version) {
  HttpRequest req;
  req.url = url_ + "/lume/host/status";
  req.timeout = std::chrono::seconds(5);
  req.connect_timeout = std::chrono::seconds(2);
  req.no_proxy = true;
  try {
    HttpResponse r = HttpFetch(req);
    if (r.status != 200) return false;
    if (version) *version = Json::parse(r.body, nullptr, false).value("version", "");
    return true;
  } catch (const Error&) {
    return false;
  }
}

void LumeApi::EnsureServer() {
  if (Answers()) return;
  static const std::regex local(R"(^http://(127\.0\.0\.1|localhost):(\d+)/?$)");
  std::smatch m;
  if (!std::regex_match(url_, m, local)) {
    throw Error(kExitUnavailable, Cat("the Lume server at ", url_, " does not answer"), {},
                {"start it there: lume serve"});
  }
  if (!FindInPath("lume")) {
    throw Error(kExitUnavailable, "Lume is not installed (no lume)", {}, {kLumeInstallHint});
  }
  // Lume's machines run inside the server: it is started for good, outside this session.
  std::string log = StateDir() + "/lume-serve.log";
  MakeDirs(StateDir(), 0700);
  ProcessOptions o;
  o.new_session = true;
  o.only_env = DaemonEnvNames();
  pid_t pid = Spawn({"lume", "serve", "--port", m[2]}, log, o);
  Debug(Cat("started the Lume server (lume serve --port ", m[2], ", pid ", pid, ")"));
  auto deadline = std::chrono::steady_clock::now() + kServerStart;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Answers()) return;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) {
      // It gave up (its port taken, its storage unreadable): why, from the end of its log.
      std::vector<std::string> tail = Tail(log, 3);
      tail.push_back(Cat("  (its log: ", log, ")"));
      throw Error(kExitUnavailable, Cat("the Lume server ss started for ", url_, " exited"), tail,
                  {"start it by hand to see why: lume serve --port " + m[2].str()});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw Error(
      kExitUnavailable,
      Cat("the Lume server did not answer at ", url_, " within ", kServerStart.count(), " s"),
      {Cat("  its log: ", log)}, {"start it by hand to see why: lume serve"});
}

HttpResponse LumeApi::Send(const std::string& method, const std::string& path, const Json& body,
                           std::chrono::milliseconds timeout) {
  HttpRequest req;
  req.url = url_ + path;
  req.method = method;
  req.no_proxy = true;
  req.timeout = timeout;
  if (!body.is_null()) {
    req.headers = {"Content-Type: application/json"};
    req.body = body.dump();
  }
  try {
    return HttpFetch(req);
  } catch (const Error&) {
    EnsureServer();  // nothing answered: Lume's server, started, and asked again
    return HttpFetch(req);
  }
}

Json LumeApi::Expect(const HttpResponse& r, std::initializer_list<long> ok, std::string_view what) {
  for (long status : ok) {
    if (r.status != status) continue;
    if (Trim(r.body).empty()) return Json::object();  // DELETE: 200 with no body
    Json j = Json::parse(r.body, nullptr, false);
    if (j.is_discarded()) {
      throw Error(kExitUnavailable,
                  Cat(what, ": Lume answered with what is not JSON: ", r.body.substr(0, 200)));
    }
    return j;
  }
  throw Error(kExitUnavailable, Cat(what, ": Lume answered ", r.status, ": ", Message(r)));
}

Json LumeApi::Call(const std::string& method, const std::string& path, const Json& body,
                   std::initializer_list<long> ok, std::string_view what) {
  return Expect(Send(method, path, body), ok, what);
}

std::optional<Json> LumeApi::Vm(const std::string& name) {
  HttpResponse r;
  try {
    r = Send("GET", Cat("/lume/vms/", name), nullptr, std::chrono::seconds(30));
  } catch (const Error&) {
    // No server, and none can start: the CLI reads Lume's storage itself.
    std::optional<Json> list = CliJson({"get", name, "-f", "json"});
    if (!list) throw;
    if (list->is_array() && !list->empty()) return (*list)[0];
    return std::nullopt;
  }
  if (r.status == 200) {
    Json j = Json::parse(r.body, nullptr, false);
    if (!j.is_object()) throw Error(kExitUnavailable, Cat("Lume sent no VMDetails for ", name));
    return j;
  }
  std::string message = Message(r);
  if (r.status == 404 || SaysNotFound(message)) return std::nullopt;
  throw Error(kExitUnavailable, Cat("Lume: ", message));
}

std::vector<Json> LumeApi::Vms() {
  HttpResponse r;
  Json j;
  try {
    r = Send("GET", "/lume/vms", nullptr);
  } catch (const Error&) {
    // No server, and none can start: the CLI reads Lume's storage itself.
    std::optional<Json> list = CliJson({"ls", "-f", "json"});
    if (!list || !list->is_array()) throw;
    j = *list;
  }
  if (j.is_null()) j = Expect(r, {200}, "cannot list Lume's machines");
  if (!j.is_array()) throw Error(kExitUnavailable, "Lume's list of machines is not a list");
  return {j.begin(), j.end()};
}

void LumeApi::PullStart(const std::string& image, const std::string& name) {
  Call("POST", "/lume/pull/start",
       {{"image", image}, {"name", name}, {"registry", "ghcr.io"}, {"organization", "trycua"}},
       {202, 200}, Cat("cannot pull ", image));
}

void LumeApi::Set(const std::string& name, int cpus, int64_t memory, int64_t disk) {
  Json body = Json::object();
  if (cpus > 0) body["cpu"] = cpus;
  if (memory > 0) body["memory"] = LumeSize(memory);
  if (disk > 0) body["diskSize"] = LumeSize(disk);
  if (body.empty()) return;
  Call("PATCH", Cat("/lume/vms/", name), body, {200},
       Cat("cannot set the resources of '", name, "'"));
}

void LumeApi::Run(const std::string& name, const std::vector<LumeShare>& shares) {
  Json dirs = Json::array();
  for (const auto& s : shares)
    dirs.push_back({{"hostPath", s.host_path}, {"readOnly", s.read_only}});
  // No display, no VNC: nothing listens for a screen nobody looks at.
  Call("POST", Cat("/lume/vms/", name, "/run"),
       {{"noDisplay", true}, {"sharedDirectories", dirs}, {"vnc", "disabled"}}, {202, 200},
       Cat("cannot start '", name, "'"));
}

void LumeApi::Stop(const std::string& name) {
  Call("POST", Cat("/lume/vms/", name, "/stop"), nullptr, {200}, Cat("cannot stop '", name, "'"));
}

void LumeApi::Delete(const std::string& name) {
  Call("DELETE", Cat("/lume/vms/", name), nullptr, {200}, Cat("cannot delete '", name, "'"));
}

void LumeApi::Clone(const std::string& name, const std::string& new_name) {
  Call("POST", "/lume/vms/clone", {{"name", name}, {"newName", new_name}}, {200},
       Cat("cannot copy '", name, "'"));
}

}  // namespace ss
