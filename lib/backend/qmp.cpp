#include "qmp.hpp"

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/read_until.hpp>
#include <asio/streambuf.hpp>
#include <asio/write.hpp>
#include <istream>
#include <optional>

#include "strings.hpp"

namespace ss {

QmpError::QmpError(std::string error_class, const std::string& command, const std::string& desc)
    : Error(kExitUnavailable, Cat("QEMU refused '", command, "': ", desc)),
      class_(std::move(error_class)) {}

struct QmpClient::Impl {
  asio::io_context io;
  asio::local::stream_protocol::socket socket{io};
  asio::streambuf buffer;

  // Runs the loop until the started operation calls back or `timeout` passes; on timeout the
  // operation is cancelled (and its handler still runs before this returns).
  template <typename Start>
  std::optional<asio::error_code> Await(std::chrono::milliseconds timeout, Start start) {
    std::optional<asio::error_code> result;
    start([&](const asio::error_code& ec, auto&&...) { result = ec; });
    io.restart();
    io.run_for(timeout);
    if (!result) {
      asio::error_code ignored;
      socket.cancel(ignored);
      io.restart();
      io.run();
      return std::nullopt;
    }
    return result;
  }
};

QmpClient::QmpClient(const std::string& socket_path, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()), path_(socket_path), timeout_(timeout) {
  auto connected = impl_->Await(timeout_, [&](auto handler) {
    impl_->socket.async_connect(asio::local::stream_protocol::endpoint(path_), handler);
  });
  if (!connected || *connected) {
    throw Error(kExitUnavailable, Cat("QEMU's monitor socket ", path_, " does not answer: ",
                                      connected ? connected->message() : "timed out"));
  }
  greeting_ = ReadMessage(timeout_);
  if (!greeting_.contains("QMP")) {
    throw Error(kExitUnavailable, Cat(path_, " is not a QMP socket: ", DumpJson(greeting_)));
  }
  Execute("qmp_capabilities");
}

QmpClient::~QmpClient() {
  asio::error_code ignored;
  impl_->socket.close(ignored);
}

std::string QmpClient::QemuVersion() const {
  const Json& q = greeting_["QMP"]["version"]["qemu"];
  return Cat(q.value("major", 0), ".", q.value("minor", 0), ".", q.value("micro", 0));
}

Json QmpClient::ReadMessage(std::chrono::milliseconds timeout) {
  auto done = impl_->Await(timeout, [&](auto handler) {
    asio::async_read_until(impl_->socket, impl_->buffer, '\n', handler);
  });
  if (!done) throw Error(kExitUnavailable, Cat("QEMU did not answer on ", path_, " in time"));
  if (*done) {
    throw Error(kExitUnavailable, Cat("QEMU closed its monitor socket (", done->message(), ")"));
  }
  std::istream in(&impl_->buffer);
  std::string line;
  std::getline(in, line);
  try {
    return Json::parse(line);
  } catch (const Json::exception& e) {
    throw Error(kExitSoftware, Cat("QEMU sent invalid JSON on ", path_, ": ", e.what()));
  }
}

Json QmpClient::Execute(const std::string& command, const Json& arguments) {
  Json request = {{"execute", command}};
  if (!arguments.is_null()) request["arguments"] = arguments;
  std::string line = DumpJson(request) + "\n";
  auto written = impl_->Await(timeout_, [&](auto handler) {
    asio::async_write(impl_->socket, asio::buffer(line), handler);
  });
  if (!written || *written) {
    throw Error(kExitUnavailable, Cat("cannot send '", command,
                                      "' to QEMU: ", written ? written->message() : "timed out"));
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Json msg = ReadMessage(std::max(left, std::chrono::milliseconds(1)));
    if (msg.contains("event")) {
      events_.push_back(std::move(msg));
      continue;
    }
    if (msg.contains("error")) {
      const Json& e = msg["error"];
      throw QmpError(e.value("class", ""), command, e.value("desc", "unknown error"));
    }
    if (msg.contains("return")) return msg["return"];
  }
}

std::string QmpClient::HumanMonitor(const std::string& command_line) {
  Json out = Execute("human-monitor-command", {{"command-line", command_line}});
  std::string text = out.is_string() ? out.get<std::string>() : std::string();
  std::string_view trimmed = Trim(text);
  if (trimmed.rfind("Error", 0) == 0 || trimmed.rfind("error", 0) == 0) {
    throw QmpError("HmpError", command_line, std::string(trimmed));
  }
  return text;
}

bool QmpClient::WaitEvent(const std::string& name, std::chrono::milliseconds timeout) {
  auto has = [&] {
    for (const auto& e : events_) {
      if (e.value("event", "") == name) return true;
    }
    return false;
  };
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!has()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    try {
      Json msg = ReadMessage(left);
      if (msg.contains("event")) events_.push_back(std::move(msg));
    } catch (const Error&) {
      return has();
    }
  }
  return true;
}

}  // namespace ss
