// A QMP (QEMU Machine Protocol) client over QEMU's unix socket: connect, read the greeting,
// negotiate capabilities, then one command at a time, each answered by one "return" or "error"
// object. Asynchronous events (SHUTDOWN, POWERDOWN, ...) arrive interleaved with the answers and
// are kept in events().
//
// QEMU serves one QMP client at a time on a socket: hold a QmpClient only as long as needed.
// Every wait is bounded by the timeout given to the constructor.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "error.hpp"
#include "json_out.hpp"

namespace ss {

// QEMU answered a command with {"error": {"class": ..., "desc": ...}}.
class QmpError : public Error {
 public:
  QmpError(std::string error_class, const std::string& command, const std::string& desc);
  const std::string& error_class() const { return class_; }

 private:
  std::string class_;
};

class QmpClient {
 public:
  // Connects, reads the greeting and sends qmp_capabilities. Throws ss::Error(69) when the
  // socket does not answer within `timeout`.
  QmpClient(const std::string& socket_path,
            std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~QmpClient();
  QmpClient(const QmpClient&) = delete;
  QmpClient& operator=(const QmpClient&) = delete;

  // {"QMP": {"version": ..., "capabilities": ...}}
  const Json& greeting() const { return greeting_; }
  // "7.2.22"
  std::string QemuVersion() const;

  // Runs `command` and returns its "return" value. Throws QmpError when QEMU refuses it and
  // ss::Error(69) when QEMU goes away or does not answer in time (a "quit" is answered before
  // QEMU closes the socket, so it returns normally).
  Json Execute(const std::string& command, const Json& arguments = Json());
  // An HMP command through human-monitor-command. HMP reports its errors inside a successful
  // return string ("Error: ..."): those become QmpError too. Returns the output.
  std::string HumanMonitor(const std::string& command_line);

  // Events received so far, oldest first.
  const std::vector<Json>& events() const { return events_; }
  // Waits until an event called `name` has arrived (or had already); false on timeout or when
  // QEMU closed the socket first.
  bool WaitEvent(const std::string& name, std::chrono::milliseconds timeout);

 private:
  struct Impl;
  Json ReadMessage(std::chrono::milliseconds timeout);  // throws on timeout or EOF
  std::unique_ptr<Impl> impl_;
  std::string path_;
  std::chrono::milliseconds timeout_;
  Json greeting_;
  std::vector<Json> events_;
};

}  // namespace ss
