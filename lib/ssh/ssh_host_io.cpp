#include "ssh_host_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/connect.hpp>
#include <asio/post.hpp>

#include "error.hpp"
#include "strings.hpp"

namespace ss::ssh_detail {
namespace {

bool WouldBlock(const asio::error_code& ec) {
  return ec == asio::error::would_block || ec == asio::error::try_again;
}

}  // namespace

template <class Protocol>
SocketIo<Protocol>::SocketIo(Socket socket) : socket_(std::move(socket)) {
  socket_.non_blocking(true);
}

template <class Protocol>
SocketIo<Protocol>::~SocketIo() {
  if (auto alive = alive_.lock()) *alive = nullptr;
}

template <class Protocol>
SocketIo<Protocol>::SocketIo(asio::io_context& io, typename Protocol::endpoint target)
    : socket_(io), connecting_(true) {
  // The handler may outlive this object only by being cancelled: the socket is closed in the
  // destructor and the cancelled handler must not touch it. A shared flag tells.
  auto alive = std::make_shared<SocketIo*>(this);
  alive_ = alive;
  socket_.async_connect(target, [alive](const asio::error_code& ec) {
    if (*alive) (*alive)->Connected(ec);
  });
}

template <class Protocol>
void SocketIo<Protocol>::Connected(const asio::error_code& ec) {
  connecting_ = false;
  if (ec) {
    failed_ = true;
  } else {
    asio::error_code ignored;
    socket_.non_blocking(true, ignored);
    if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
      socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    }
  }
  auto waiting = std::move(after_connect_);
  after_connect_.clear();
  for (auto& ready : waiting) ready();
}

template <class Protocol>
long SocketIo<Protocol>::Read(char* buf, size_t n) {
  if (connecting_) return kWouldBlock;
  if (failed_) return kFailed;
  asio::error_code ec;
  size_t got = socket_.read_some(asio::buffer(buf, n), ec);
  if (WouldBlock(ec)) return kWouldBlock;
  if (ec == asio::error::eof) return 0;
  if (ec) return kFailed;
  return static_cast<long>(got);
}

template <class Protocol>
void SocketIo<Protocol>::WaitReadable(Ready ready) {
  if (connecting_) {
    after_connect_.push_back(std::move(ready));
    return;
  }
  socket_.async_wait(Socket::wait_read,
                     [ready = std::move(ready)](const asio::error_code&) { ready(); });
}

template <class Protocol>
long SocketIo<Protocol>::Write(const char* data, size_t n) {
  if (connecting_) return kWouldBlock;
  if (failed_) return kFailed;
  asio::error_code ec;
  size_t put = socket_.write_some(asio::buffer(data, n), ec);
  if (WouldBlock(ec)) return kWouldBlock;
  if (ec) return kFailed;
  return static_cast<long>(put);
}

template <class Protocol>
void SocketIo<Protocol>::WaitWritable(Ready ready) {
  if (connecting_) {
    after_connect_.push_back(std::move(ready));
    return;
  }
  socket_.async_wait(Socket::wait_write,
                     [ready = std::move(ready)](const asio::error_code&) { ready(); });
}

template <class Protocol>
void SocketIo<Protocol>::Finish() {
  asio::error_code ignored;
  if (!connecting_ && !failed_) socket_.shutdown(Socket::shutdown_send, ignored);
}

template class SocketIo<asio::ip::tcp>;
template class SocketIo<asio::local::stream_protocol>;
template class SocketIo<asio::generic::stream_protocol>;

FdIo::FdIo(asio::io_context& io, int fd) : io_(io), fd_(io) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) throw Error(kExitSoftware, Cat("cannot use file descriptor ", fd));
  struct stat st;
  if (::fstat(copy, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
    *pollable_ = false;
  }
  asio::error_code ec;
  fd_.assign(copy, ec);
  if (ec) {
    ::close(copy);
    throw Error(kExitSoftware, Cat("cannot watch file descriptor ", fd, ": ", ec.message()));
  }
  fd_.non_blocking(true, ec);
}

long FdIo::Read(char* buf, size_t n) {
  asio::error_code ec;
  size_t got = fd_.read_some(asio::buffer(buf, n), ec);
  if (WouldBlock(ec)) return kWouldBlock;
  if (ec == asio::error::eof) return 0;
  if (ec) return kFailed;
  return static_cast<long>(got);
}

long FdIo::Write(const char* data, size_t n) {
  asio::error_code ec;
  size_t put = fd_.write_some(asio::buffer(data, n), ec);
  if (WouldBlock(ec)) return kWouldBlock;
  if (ec) return kFailed;
  return static_cast<long>(put);
}

void FdIo::WaitReadable(Ready ready) { Wait(asio::posix::stream_descriptor::wait_read, ready); }
void FdIo::WaitWritable(Ready ready) { Wait(asio::posix::stream_descriptor::wait_write, ready); }

void FdIo::Wait(asio::posix::stream_descriptor::wait_type type, Ready ready) {
  if (!*pollable_) {
    asio::post(io_, std::move(ready));
    return;
  }
  // Descriptors epoll cannot watch (/dev/null and other character devices) answer with
  // operation_not_supported: they never block, so from then on they are always ready.
  fd_.async_wait(type,
                 [pollable = pollable_, ready = std::move(ready)](const asio::error_code& ec) {
                   if (ec == asio::error::operation_not_supported) *pollable = false;
                   ready();
                 });
}

long StringSource::Read(char* buf, size_t n) {
  size_t take = std::min(n, data_.size() - pos_);
  data_.copy(buf, take, pos_);
  pos_ += take;
  return static_cast<long>(take);
}

long GatedSource::Read(char* buf, size_t n) {
  if (!open_) return kWouldBlock;
  return inner_->Read(buf, n);
}

void GatedSource::WaitReadable(Ready ready) {
  if (!open_) {
    waiting_ = std::move(ready);
    return;
  }
  inner_->WaitReadable(std::move(ready));
}

void GatedSource::Open() {
  open_ = true;
  if (waiting_) {
    Ready ready = std::move(waiting_);
    waiting_ = nullptr;
    ready();
  }
}

long ChainSource::Read(char* buf, size_t n) {
  while (current_ < parts_.size()) {
    long got = parts_[current_]->Read(buf, n);
    if (got != 0) return got;
    ++current_;
  }
  return 0;
}

void ChainSource::WaitReadable(Ready ready) {
  if (current_ < parts_.size()) {
    parts_[current_]->WaitReadable(std::move(ready));
  } else {
    ready();
  }
}

MarkerSink::MarkerSink(std::shared_ptr<Sink> inner, MarkerFilter filter, Ready on_ready,
                       Ready on_done)
    : inner_(std::move(inner)),
      filter_(std::move(filter)),
      on_ready_(std::move(on_ready)),
      on_done_(std::move(on_done)) {}

bool MarkerSink::FlushPending() {
  while (!pending_.empty()) {
    long put = inner_->Write(pending_.data(), pending_.size());
    if (put == kWouldBlock) return false;
    if (put < 0) {
      failed_ = true;
      return false;
    }
    pending_.erase(0, static_cast<size_t>(put));
  }
  return true;
}

long MarkerSink::Write(const char* data, size_t n) {
  if (failed_) return kFailed;
  if (!FlushPending()) return failed_ ? kFailed : kWouldBlock;
  if (filter_.done_seen()) return inner_->Write(data, n);
  pending_ = filter_.Feed(std::string_view(data, n));
  if (filter_.ready_seen() && on_ready_) {
    Ready call = std::move(on_ready_);
    on_ready_ = nullptr;
    call();
  }
  if (filter_.done_seen() && on_done_) {
    Ready call = std::move(on_done_);
    on_done_ = nullptr;
    call();
  }
  FlushPending();
  return static_cast<long>(n);
}

void MarkerSink::Finish() {
  pending_ += filter_.Flush();
  FlushPending();
  inner_->Finish();
}

}  // namespace ss::ssh_detail
