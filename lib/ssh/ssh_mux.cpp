#include "ssh_mux.hpp"

#include <fcntl.h>
#include <libssh/server.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <asio/post.hpp>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss::ssh_detail {
namespace {

constexpr size_t kScratch = 64 * 1024;       // one read from a host source or from libssh
constexpr size_t kQueueCap = 256 * 1024;     // channel output held for a slow host sink
constexpr size_t kInputBudget = 512 * 1024;  // host bytes moved per channel per round
constexpr int kMaxRounds = 16;               // drain rounds per wake-up before yielding
constexpr int kMaxReads = 64;                // socket reads (4 KiB each in libssh) per round
constexpr auto kRecheck = std::chrono::milliseconds(20);

bool SessionBroken(ssh_session s) {
  return !ssh_is_connected(s) || (ssh_get_status(s) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0;
}

bool WritePending(ssh_session s) { return (ssh_get_status(s) & SSH_WRITE_PENDING) != 0; }

void WakeAll(std::vector<std::weak_ptr<Channel>>& list) {
  auto waiting = std::move(list);
  list.clear();
  for (auto& weak : waiting) {
    if (auto c = weak.lock()) c->Poke();
  }
}

}  // namespace

Channel::Channel(Mux& mux, ChannelSpec spec) : mux_(mux), spec_(std::move(spec)) {
  out_[0].sink = std::move(spec_.out);
  out_[1].sink = std::move(spec_.err);
}

void Channel::Close() {
  close_requested_ = true;
  Poke();
}

void Channel::Poke() {
  mux_.MarkDirty(*this);
  mux_.Wake();
}

bool Channel::SendSignal(const char* name) {
  if (state_ != kOpen || remote_closed_) return false;
  bool ok = ssh_channel_request_send_signal(ch_, name) == SSH_OK;
  mux_.Wake();
  return ok;
}

void Channel::ChangePtySize(int cols, int rows) {
  if (state_ != kOpen || remote_closed_) return;
  ssh_channel_change_pty_size(ch_, cols, rows);
  mux_.Wake();
}

// Channel output: straight to the sink when nothing is queued, else queued up to the cap. What
// does not fit stays in libssh (the window stops growing) and is pulled later.
long Channel::Deliver(int stream, const char* data, size_t n) {
  Output& o = out_[stream];
  if (!o.sink || o.failed) return static_cast<long>(n);
  size_t done = 0;
  if (o.queue.empty()) {
    long put = o.sink->Write(data, n);
    if (put == kFailed) {
      o.failed = true;
      mux_.MarkDirty(*this);
      return static_cast<long>(n);
    }
    if (put > 0) done = static_cast<size_t>(put);
  }
  if (done < n) {
    size_t room = o.queue.size() < kQueueCap ? kQueueCap - o.queue.size() : 0;
    size_t take = std::min(n - done, room);
    o.queue.append(data + done, take);
    done += take;
    if (done < n) o.backlog = true;
    mux_.MarkDirty(*this);
  }
  return static_cast<long>(done);
}

Mux::Mux(ssh_session session, MuxOptions options)
    : session_(session),
      options_(std::move(options)),
      socket_(io_),
      tick_(io_),
      keepalive_(io_),
      scratch_(kScratch) {
  // A duplicate, so that Asio never closes libssh's socket. It is only waited on, never read or
  // written, and stays blocking: libssh takes EAGAIN on its socket for a fatal error.
  int fd = ::fcntl(ssh_get_fd(session_), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw Error(kExitSoftware, "cannot watch the SSH connection's socket");
  socket_.assign(fd);
  ssh_set_counters(session_, &counter_, nullptr);
  event_ = ssh_event_new();
  if (event_ == nullptr || ssh_event_add_session(event_, session_) != SSH_OK) {
    throw Error(kExitSoftware, "cannot set up the SSH event loop");
  }
  ssh_set_message_callback(session_, &Mux::OnMessage, this);
  ssh_set_blocking(session_, 0);
  in_seen_ = InBytes();
  keepalive_seen_ = InBytes();
  if (options_.keepalive_interval.count() > 0) Keepalive();
}

Mux::~Mux() {
  for (auto& c : channels_) {
    if (c->ch_ == nullptr) continue;
    if (c->callbacks_set_) ssh_remove_channel_callbacks(c->ch_, &c->callbacks_);
    ssh_channel_free(c->ch_);
    c->ch_ = nullptr;
  }
  ssh_set_message_callback(session_, nullptr, nullptr);
  ssh_event_remove_session(event_, session_);
  ssh_event_free(event_);
  ssh_set_counters(session_, nullptr, nullptr);
  ssh_set_blocking(session_, 1);
  // Host ends go before the io_context they were made on.
  dirty_.clear();
  channels_.clear();
}

std::shared_ptr<Channel> Mux::Start(ChannelSpec spec) {
  std::shared_ptr<Channel> c(new Channel(*this, std::move(spec)));
  channels_.push_back(c);
  if (lost_) {
    Finish(*c, options_.lost_message);
    return c;
  }
  MarkDirty(*c);
  Wake();
  return c;
}

std::shared_ptr<Channel> Mux::Adopt(ssh_channel channel, ChannelSpec spec) {
  std::shared_ptr<Channel> c(new Channel(*this, std::move(spec)));
  c->ch_ = channel;
  c->state_ = Channel::kOpen;
  InstallCallbacks(*c);
  channels_.push_back(c);
  MarkDirty(*c);
  Wake();
  return c;
}

void Mux::SetChannelOpenHandler(std::function<bool(ssh_message)> handler) {
  open_handler_ = std::move(handler);
}

int Mux::Blocking(const std::function<int()>& fn) {
  ssh_set_blocking(session_, 1);
  if (keepalive_outstanding_) {
    // Resolves the outstanding keepalive (or sends one and waits for its answer), so that the
    // next global request does not take the keepalive's answer for its own.
    ssh_send_keepalive(session_);
    keepalive_outstanding_ = false;
  }
  int rc = fn();
  ssh_set_blocking(session_, 0);
  if (SessionBroken(session_)) Lose("broken during a global request");
  Wake();
  return rc;
}

void Mux::RunUntil(const std::function<bool()>& done) {
  if (io_.stopped()) io_.restart();
  Wake();
  while (!done()) {
    if (lost_) throw Error(kExitRemote, options_.lost_message).AsPlain();
    io_.run_one();
  }
}

void Mux::Run() {
  RunUntil([this] { return stop_; });
  stop_ = false;
}

void Mux::Stop() {
  asio::post(io_, [this] { stop_ = true; });
}

void Mux::Wake() {
  if (wake_posted_) return;
  wake_posted_ = true;
  asio::post(io_, [this] {
    wake_posted_ = false;
    Pump();
  });
}

void Mux::MarkDirty(Channel& c) {
  if (c.dirty_ || c.state_ == Channel::kDone) return;
  c.dirty_ = true;
  dirty_.push_back(c.shared_from_this());
}

void Mux::Pump() {
  if (pumping_ || lost_) return;
  pumping_ = true;
  for (int round = 0; round < kMaxRounds && !lost_; ++round) {
    if (!Ingest()) {
      Lose("read failed");
      break;
    }
    bool heard = InBytes() != in_seen_;
    in_seen_ = InBytes();
    if (heard) WakeAll(waiting_for_server_);
    if (dirty_.empty() && !heard) break;
    auto work = std::move(dirty_);
    dirty_.clear();
    for (auto& c : work) {
      c->dirty_ = false;
      if (c->state_ != Channel::kDone) Step(*c);
      if (lost_) break;
    }
    if (lost_) break;
    if (!Flush()) {
      Lose("write failed");
      break;
    }
    if (!WritePending(session_)) WakeAll(waiting_for_flush_);
  }
  pumping_ = false;
  channels_.erase(std::remove_if(channels_.begin(), channels_.end(),
                                 [](const auto& c) { return c->state_ == Channel::kDone; }),
                  channels_.end());
  if (lost_) return;
  if (!dirty_.empty()) Wake();
  ArmWaits();
}

// Reads everything the socket has (libssh reads 4 KiB per poll), letting libssh parse it and
// call the channel callbacks.
bool Mux::Ingest() {
  for (int i = 0; i < kMaxReads; ++i) {
    uint64_t before = InBytes();
    int rc = ssh_event_dopoll(event_, 0);
    if (rc == SSH_ERROR || SessionBroken(session_)) return false;
    if (InBytes() == before) return true;
  }
  Wake();  // more to read: after the other handlers had a turn
  return true;
}

// Writes libssh's pending output while the socket takes it.
bool Mux::Flush() {
  while (WritePending(session_)) {
    uint64_t before = counter_.out_bytes;
    int rc = ssh_event_dopoll(event_, 0);
    if (rc == SSH_ERROR || SessionBroken(session_)) return false;
    if (counter_.out_bytes == before) break;  // the socket is full: wait for writability
  }
  return true;
}

void Mux::Step(Channel& c) {
  if (c.close_requested_) {
    Finish(c, {});
    return;
  }
  if (c.state_ == Channel::kOpening) {
    if (c.ch_ == nullptr) c.ch_ = ssh_channel_new(session_);
    if (c.ch_ == nullptr) {
      Finish(c, Cat("cannot create a channel: ", ssh_get_error(session_)));
      return;
    }
    int rc = c.spec_.open(c.ch_);
    if (rc == SSH_AGAIN) {
      waiting_for_server_.push_back(c.weak_from_this());
      return;
    }
    if (rc != SSH_OK) {
      Finish(c, Cat("cannot open the ", c.spec_.what, " channel: ", ssh_get_error(session_)));
      return;
    }
    InstallCallbacks(c);
    c.state_ = Channel::kRequesting;
  }
  if (c.state_ == Channel::kRequesting) {
    while (c.next_request_ < c.spec_.requests.size()) {
      const ChannelRequest& r = c.spec_.requests[c.next_request_];
      int rc = r.send(c.ch_);
      if (rc == SSH_AGAIN) {
        waiting_for_server_.push_back(c.weak_from_this());
        return;
      }
      if (rc != SSH_OK) {
        Finish(c, Cat("the sandbox refused the ", r.what));
        return;
      }
      ++c.next_request_;
    }
    c.state_ = Channel::kOpen;
    if (c.spec_.on_open) c.spec_.on_open();
    if (c.state_ != Channel::kOpen) return;
  }
  Transfer(c);
}

void Mux::Transfer(Channel& c) {
  for (int s = 0; s < 2; ++s) {
    FlushOutput(c, s);
    Channel::Output& o = c.out_[s];
    if (o.backlog && !o.failed && o.queue.size() < kQueueCap) Pull(c, s);
  }
  if (c.out_[0].failed || c.out_[1].failed) {
    Finish(c, {});
    return;
  }
  FeedInput(c);
  if (c.state_ == Channel::kDone) return;
  if (c.input_failed_) {
    Finish(c, {});
    return;
  }
  bool drained = true;
  for (auto& o : c.out_) drained = drained && o.queue.empty() && !o.backlog;
  if (c.remote_eof_ && drained && !c.output_finished_) {
    c.output_finished_ = true;
    for (auto& o : c.out_) {
      if (o.sink) o.sink->Finish();
    }
  }
  if (drained && (c.remote_closed_ ||
                  (c.spec_.close_on_eof && c.remote_eof_ && c.input_ended_ && c.eof_sent_))) {
    Finish(c, {});
  }
}

// Takes output libssh holds for us because the queue was full.
void Mux::Pull(Channel& c, int stream) {
  Channel::Output& o = c.out_[stream];
  while (!o.failed && o.queue.size() < kQueueCap && c.ch_ != nullptr) {
    uint32_t want = static_cast<uint32_t>(std::min(scratch_.size(), kQueueCap - o.queue.size()));
    int n = ssh_channel_read_nonblocking(c.ch_, scratch_.data(), want, stream);
    if (n <= 0) {
      o.backlog = false;
      break;
    }
    // Reading may have let libssh hand newer output to OnData first, filling the queue: what was
    // read is out of libssh for good, so whatever Deliver has no room for is queued all the same.
    size_t took = static_cast<size_t>(c.Deliver(stream, scratch_.data(), static_cast<size_t>(n)));
    if (took < static_cast<size_t>(n) && !o.failed) {
      o.queue.append(scratch_.data() + took, static_cast<size_t>(n) - took);
    }
  }
  FlushOutput(c, stream);
}

void Mux::FlushOutput(Channel& c, int stream) {
  Channel::Output& o = c.out_[stream];
  while (!o.queue.empty() && !o.failed) {
    long put = o.sink->Write(o.queue.data(), o.queue.size());
    if (put == kFailed) {
      o.failed = true;
      break;
    }
    if (put <= 0) {
      if (!o.waiting) {
        o.waiting = true;
        std::weak_ptr<Channel> weak = c.weak_from_this();
        o.sink->WaitWritable([weak, stream] {
          if (auto p = weak.lock()) {
            p->out_[stream].waiting = false;
            p->Poke();
          }
        });
      }
      break;
    }
    o.queue.erase(0, static_cast<size_t>(put));
  }
}

// Moves host bytes into the channel, as far as the remote window and libssh's output allow.
void Mux::FeedInput(Channel& c) {
  if (c.eof_sent_ || c.remote_closed_ || c.input_failed_) return;
  size_t budget = kInputBudget;
  while (budget > 0) {
    if (WritePending(session_)) {
      if (!Flush()) {
        Lose("write failed");
        return;
      }
      if (WritePending(session_)) {
        waiting_for_flush_.push_back(c.weak_from_this());
        return;
      }
    }
    uint32_t window = ssh_channel_window_size(c.ch_);
    if (!c.unsent_.empty()) {
      if (window == 0) {
        waiting_for_server_.push_back(c.weak_from_this());
        return;
      }
      uint32_t len = static_cast<uint32_t>(std::min<size_t>(c.unsent_.size(), window));
      int put = ssh_channel_write(c.ch_, c.unsent_.data(), len);
      if (put < 0) {
        InputRefused(c);
        return;
      }
      if (put == 0) {
        waiting_for_server_.push_back(c.weak_from_this());  // key re-exchange in progress
        return;
      }
      c.unsent_.erase(0, static_cast<size_t>(put));
      budget -= std::min(budget, static_cast<size_t>(put));
      continue;
    }
    if (c.input_ended_ || !c.spec_.in) {
      c.input_ended_ = true;
      c.eof_sent_ = true;
      ssh_channel_send_eof(c.ch_);
      MarkDirty(c);  // close_on_eof may now be due
      return;
    }
    if (c.input_waiting_) return;
    if (window == 0) {
      waiting_for_server_.push_back(c.weak_from_this());
      return;
    }
    size_t want = std::min<size_t>({window, scratch_.size(), budget});
    long n = c.spec_.in->Read(scratch_.data(), want);
    if (n > 0) {
      int put = ssh_channel_write(c.ch_, scratch_.data(), static_cast<uint32_t>(n));
      if (put < 0) {
        InputRefused(c);
        return;
      }
      if (put < n) c.unsent_.assign(scratch_.data() + put, static_cast<size_t>(n - put));
      budget -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      c.input_ended_ = true;
      continue;
    }
    if (n == kWouldBlock) {
      c.input_waiting_ = true;
      std::weak_ptr<Channel> weak = c.weak_from_this();
      c.spec_.in->WaitReadable([weak] {
        if (auto p = weak.lock()) {
          p->input_waiting_ = false;
          p->Poke();
        }
      });
      return;
    }
    c.input_failed_ = true;
    return;
  }
  MarkDirty(c);  // budget used up: more in the next round
}

// libssh refused channel input: the remote side closed the channel meanwhile (its output is still
// delivered), or the connection broke (the drain notices).
void Mux::InputRefused(Channel& c) {
  c.unsent_.clear();
  c.input_ended_ = true;
  c.eof_sent_ = true;
  if (!c.remote_closed_ && !SessionBroken(session_)) c.input_failed_ = true;
}

void Mux::Finish(Channel& c, std::string error) {
  if (c.state_ == Channel::kDone) return;
  c.state_ = Channel::kDone;
  ChannelEnd end;
  end.error = std::move(error);
  end.lost = lost_;
  end.exit_status = c.exit_status_;
  end.exit_signal = c.exit_signal_;
  end.output_failed = c.out_[0].failed || c.out_[1].failed;
  if (c.ch_ != nullptr) {
    if (c.callbacks_set_) ssh_remove_channel_callbacks(c.ch_, &c.callbacks_);
    c.callbacks_set_ = false;
    ssh_channel_free(c.ch_);  // sends the close if the connection still works
    c.ch_ = nullptr;
  }
  auto on_end = std::move(c.spec_.on_end);
  c.spec_ = ChannelSpec{};
  for (auto& o : c.out_) {
    o.sink.reset();
    o.queue.clear();
    o.queue.shrink_to_fit();
  }
  if (on_end) on_end(end);
}

void Mux::Lose(std::string why) {
  if (lost_) return;
  lost_ = true;
  Debug(Cat("ssh: ", options_.lost_message, " (", why, ")"));
  auto all = channels_;
  for (auto& c : all) Finish(*c, options_.lost_message);
  asio::error_code ignored;
  tick_.cancel();
  keepalive_.cancel();
  socket_.cancel(ignored);
}

void Mux::InstallCallbacks(Channel& c) {
  c.callbacks_ = ssh_channel_callbacks_struct{};
  c.callbacks_.userdata = &c;
  c.callbacks_.channel_data_function = &Mux::OnData;
  c.callbacks_.channel_eof_function = &Mux::OnEof;
  c.callbacks_.channel_close_function = &Mux::OnClose;
  c.callbacks_.channel_exit_status_function = &Mux::OnExitStatus;
  c.callbacks_.channel_exit_signal_function = &Mux::OnExitSignal;
  ssh_callbacks_init(&c.callbacks_);
  ssh_set_channel_callbacks(c.ch_, &c.callbacks_);
  c.callbacks_set_ = true;
}

void Mux::ArmWaits() {
  if (lost_) return;
  // Acknowledge what comes next at once: until a session starts, sshd's end of the connection
  // has Nagle on, so each of its small replies would wait for our delayed ACK (20-40 ms).
  // Linux drops quick-ACK mode as the exchange goes on, so it is asked for before every wait.
  int one = 1;
  ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
  if (!read_waiting_) {
    read_waiting_ = true;
    socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                       [this](const asio::error_code& ec) {
                         read_waiting_ = false;
                         if (!ec) Pump();
                       });
  }
  if (WritePending(session_) && !write_waiting_) {
    write_waiting_ = true;
    socket_.async_wait(asio::posix::stream_descriptor::wait_write,
                       [this](const asio::error_code& ec) {
                         write_waiting_ = false;
                         if (!ec) Pump();
                       });
  }
  if (!channels_.empty() && !tick_armed_) {
    tick_armed_ = true;
    tick_.expires_after(kRecheck);
    tick_.async_wait([this](const asio::error_code& ec) {
      tick_armed_ = false;
      if (!ec) Tick();
    });
  }
}

// The re-check timer: libssh may have taken in packets during a call without the socket
// becoming readable again, so every channel gets another look now and then.
void Mux::Tick() {
  for (auto& c : channels_) MarkDirty(*c);
  Pump();
}

// Sends a keepalive when nothing came from the server for an interval; the connection counts as
// lost after keepalive_count_max intervals without a byte.
void Mux::Keepalive() {
  keepalive_.expires_after(options_.keepalive_interval);
  keepalive_.async_wait([this](const asio::error_code& ec) {
    if (ec || lost_) return;
    if (InBytes() != keepalive_seen_) {
      keepalive_seen_ = InBytes();
      keepalive_missed_ = 0;
    } else if (++keepalive_missed_ > options_.keepalive_count_max) {
      Lose(Cat("no answer for ", options_.keepalive_interval.count() * options_.keepalive_count_max,
               " s"));
      return;
    } else {
      // libssh keeps one global request slot: the first call collects the answer to the last
      // keepalive (or sends one), the second sends one if the first only collected.
      ssh_send_keepalive(session_);
      ssh_send_keepalive(session_);
      keepalive_outstanding_ = true;
      Wake();
    }
    Keepalive();
  });
}

int Mux::OnData(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* ud) {
  auto* c = static_cast<Channel*>(ud);
  return static_cast<int>(c->Deliver(is_stderr ? 1 : 0, static_cast<const char*>(data), len));
}

void Mux::OnEof(ssh_session, ssh_channel, void* ud) {
  auto* c = static_cast<Channel*>(ud);
  c->remote_eof_ = true;
  c->mux_.MarkDirty(*c);
}

void Mux::OnClose(ssh_session, ssh_channel, void* ud) {
  auto* c = static_cast<Channel*>(ud);
  c->remote_eof_ = true;
  c->remote_closed_ = true;
  c->mux_.MarkDirty(*c);
}

void Mux::OnExitStatus(ssh_session, ssh_channel, int status, void* ud) {
  static_cast<Channel*>(ud)->exit_status_ = status;
}

void Mux::OnExitSignal(ssh_session, ssh_channel, const char* sig, int, const char*, const char*,
                       void* ud) {
  static_cast<Channel*>(ud)->exit_signal_ = sig ? sig : "";
}

int Mux::OnMessage(ssh_session, ssh_message msg, void* ud) {
  auto* mux = static_cast<Mux*>(ud);
  if (ssh_message_type(msg) == SSH_REQUEST_CHANNEL_OPEN && mux->open_handler_ &&
      mux->open_handler_(msg)) {
    return 0;
  }
  return 1;  // libssh sends the default reply (a refusal)
}

}  // namespace ss::ssh_detail
