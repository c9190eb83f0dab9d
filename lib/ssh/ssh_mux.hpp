// The event loop of one SSH connection (internal to the SSH layer). Every channel of the
// connection (exec, PTY session, forwarded connections) is driven here, on one thread, by one
// Asio io_context, because a libssh session and its channels are not thread-safe.
//
// After authentication the session is non-blocking. The loop:
//   - watches a duplicate of the session's socket for readability (and writability while libssh
//     holds unsent output) and wakes up on host-side readiness, keepalive and a re-check timer;
//   - on each wake-up drains everything: reads the socket until it is empty (libssh's channel
//     callbacks take data, EOF, close and exit status as they are parsed), retries channel opens
//     and requests that were waiting for a reply, moves host bytes into channels, and flushes;
//   - respects the SSH window: host input is read only as far as the remote window allows and only
//     while libssh has no unsent output (backpressure to the host side); channel output a host
//     sink cannot take stays queued up to a cap, then in libssh's buffer, which stops the window
//     from growing (backpressure to the remote side).
#pragma once

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ssh_host_io.hpp"

namespace ss::ssh_detail {

// How a channel ended.
struct ChannelEnd {
  std::string error;  // why it failed (could not open, request refused, connection lost)
  bool lost = false;  // the connection was lost
  int exit_status = -1;
  std::string exit_signal;     // "TERM" when the remote command was killed by a signal
  bool output_failed = false;  // a host sink stopped taking output (EPIPE, ECONNRESET)
};

// A request sent on a new channel, retried while it returns SSH_AGAIN.
struct ChannelRequest {
  std::string what;  // for the error message: "exec request", "environment variable 'X'"
  std::function<int(ssh_channel)> send;
};

struct ChannelSpec {
  std::string what;                      // "session", "forward to 127.0.0.1:80"
  std::function<int(ssh_channel)> open;  // ssh_channel_open_session and friends
  std::vector<ChannelRequest> requests;  // after the open: pty-req, env, exec...
  std::shared_ptr<Source> in;            // null: the input ends at once
  std::shared_ptr<Sink> out;             // channel stdout; null: discarded
  std::shared_ptr<Sink> err;             // channel stderr; null: discarded
  bool close_on_eof = false;             // forwards: close once both directions ended
  std::function<void()> on_open;         // after the last request succeeded
  std::function<void(const ChannelEnd&)> on_end;
};

class Mux;

class Channel : public std::enable_shared_from_this<Channel> {
 public:
  // Closes the channel now (output not yet delivered is dropped).
  void Close();
  // Sends a signal ("INT", "TERM"...) to the remote command; false when not possible yet.
  bool SendSignal(const char* name);
  void ChangePtySize(int cols, int rows);
  bool is_open() const { return state_ == kOpen; }
  bool done() const { return state_ == kDone; }
  // Wakes the loop to look at this channel again (a gated source was opened).
  void Poke();

 private:
  friend class Mux;
  enum State { kOpening, kRequesting, kOpen, kDone };
  struct Output {
    std::shared_ptr<Sink> sink;
    std::string queue;     // taken from libssh, not yet taken by the sink
    bool waiting = false;  // a writability wait is armed
    bool backlog = false;  // libssh holds data we did not take (queue was full)
    bool failed = false;
  };

  Channel(Mux& mux, ChannelSpec spec);
  long Deliver(int stream, const char* data, size_t n);

  Mux& mux_;
  ChannelSpec spec_;
  ssh_channel ch_ = nullptr;
  ssh_channel_callbacks_struct callbacks_{};
  bool callbacks_set_ = false;
  State state_ = kOpening;
  size_t next_request_ = 0;
  Output out_[2];
  std::string unsent_;  // host input libssh did not take (during a key re-exchange)
  bool eof_sent_ = false;
  bool remote_eof_ = false;
  bool remote_closed_ = false;
  bool output_finished_ = false;
  bool input_waiting_ = false;
  bool input_ended_ = false;
  bool input_failed_ = false;
  bool close_requested_ = false;
  bool dirty_ = false;
  int exit_status_ = -1;
  std::string exit_signal_;
};

struct MuxOptions {
  std::string lost_message;  // "connection to sandbox 'x' lost"
  std::chrono::seconds keepalive_interval{15};
  int keepalive_count_max = 3;
};

class Mux {
 public:
  Mux(ssh_session session, MuxOptions options);
  ~Mux();
  Mux(const Mux&) = delete;
  Mux& operator=(const Mux&) = delete;

  asio::io_context& io() { return io_; }
  ssh_session session() const { return session_; }

  std::shared_ptr<Channel> Start(ChannelSpec spec);
  // Takes over a channel libssh already opened (an accepted forwarded-tcpip channel).
  std::shared_ptr<Channel> Adopt(ssh_channel channel, ChannelSpec spec);
  // Called (inside libssh's packet handling) for each channel-open request from the server;
  // returns whether it took the message (else libssh refuses it).
  void SetChannelOpenHandler(std::function<bool(ssh_message)> handler);

  // Runs `fn` with the session in blocking mode, for global requests (tcpip-forward): first waits
  // for the answer to an outstanding keepalive, which shares libssh's one global-request slot.
  int Blocking(const std::function<int()>& fn);

  // Runs the loop until done(); throws ss::Error(255) when the connection is lost.
  void RunUntil(const std::function<bool()>& done);
  // Runs the loop until Stop() (which may also come before); throws like RunUntil.
  void Run();
  // Makes the current or next Run() return; callable from any thread.
  void Stop();

  bool lost() const { return lost_; }
  const std::string& lost_message() const { return options_.lost_message; }
  size_t channel_count() const { return channels_.size(); }

  // Schedules a drain (from handlers and owners; never re-entrant).
  void Wake();

 private:
  friend class Channel;
  static int OnData(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* ud);
  static void OnEof(ssh_session, ssh_channel, void* ud);
  static void OnClose(ssh_session, ssh_channel, void* ud);
  static void OnExitStatus(ssh_session, ssh_channel, int status, void* ud);
  static void OnExitSignal(ssh_session, ssh_channel, const char* sig, int core, const char* msg,
                           const char* lang, void* ud);
  static int OnMessage(ssh_session, ssh_message msg, void* ud);

  void Pump();
  bool Ingest();
  bool Flush();
  void Step(Channel& c);
  void Transfer(Channel& c);
  void Pull(Channel& c, int stream);
  void FlushOutput(Channel& c, int stream);
  void FeedInput(Channel& c);
  void InputRefused(Channel& c);
  void Finish(Channel& c, std::string error);
  void Lose(std::string why);
  void MarkDirty(Channel& c);
  void InstallCallbacks(Channel& c);
  void ArmWaits();
  void Tick();
  void Keepalive();
  uint64_t InBytes() const { return counter_.in_bytes; }

  ssh_session session_;
  MuxOptions options_;
  asio::io_context io_;
  asio::posix::stream_descriptor socket_;
  asio::steady_timer tick_;
  asio::steady_timer keepalive_;
  ssh_event event_ = nullptr;
  ssh_counter_struct counter_{};
  std::vector<std::shared_ptr<Channel>> channels_;
  std::vector<std::shared_ptr<Channel>> dirty_;
  // Channels to look at again when libssh's output has been flushed, and when anything came from
  // the server (open and request replies, window adjustments have no callback).
  std::vector<std::weak_ptr<Channel>> waiting_for_flush_;
  std::vector<std::weak_ptr<Channel>> waiting_for_server_;
  uint64_t in_seen_ = 0;
  std::function<bool(ssh_message)> open_handler_;
  std::vector<char> scratch_;
  bool read_waiting_ = false;
  bool write_waiting_ = false;
  bool tick_armed_ = false;
  bool wake_posted_ = false;
  bool pumping_ = false;
  bool stop_ = false;
  bool lost_ = false;
  bool keepalive_outstanding_ = false;
  int keepalive_missed_ = 0;
  uint64_t keepalive_seen_ = 0;
};

}  // namespace ss::ssh_detail
