#include "transfer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "fs.hpp"
#include "process.hpp"
#include "ssh.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// Writes stdin to $1 with mode $2 and time $3: beside it, then renamed over it.
constexpr const char* kPutFile = R"sh(set -eu
t=$1
d=$(dirname -- "$t")
mkdir -p -- "$d"
tmp=$(mktemp -- "$d/.ss-push.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp"
chmod -- "$2" "$tmp"
touch -m -d "@$3" -- "$tmp"
mv -f -T -- "$tmp" "$t"
trap - EXIT
)sh";

// Extracts the tar stream on stdin into directory $1 (made when missing).
constexpr const char* kPutTree = R"sh(set -eu
mkdir -p -- "$1"
exec tar -x -p -f - -C "$1"
)sh";

// "TYPE MODE MTIME" of $1: TYPE is f (file), d (directory) or o (other).
constexpr const char* kStat =
    R"sh(if [ -d "$1" ]; then t=d; elif [ -f "$1" ]; then t=f; else t=o; fi
exec stat -L -c "$t %a %Y %s" -- "$1"
)sh";

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Strip(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

int OpenOrThrow(const std::string& path, int flags, mode_t mode = 0600) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    throw Error(errno == ENOENT ? kExitNoInput : kExitIoErr,
                Cat("cannot open ", path, ": ", std::strerror(errno)));
  }
  return fd;
}

struct RemoteStat {
  char type = 0;  // 0: missing
  mode_t mode = 0;
  int64_t mtime = 0;
  int64_t size = 0;
};

RemoteStat StatRemote(SshConnection& conn, const std::string& path) {
  ExecResult r = conn.Exec({"sh", "-c", kStat, "ss-stat", path});
  RemoteStat s;
  if (r.status != 0) return s;
  auto w = Split(std::string(Trim(r.out)), ' ');
  if (w.size() != 4) return s;
  s.type = w[0][0];
  s.mode = static_cast<mode_t>(std::stoul(w[1], nullptr, 8));
  s.mtime = std::stoll(w[2]);
  s.size = std::stoll(w[3]);
  return s;
}

}  // namespace

std::string RemotePath(const std::string& path, const std::string& remote_base) {
  if (!path.empty() && path[0] == '/') return path;
  if (path.empty() || path == "." || path == "./") return remote_base;
  std::string rel = path.rfind("./", 0) == 0 ? path.substr(2) : path;
  return Cat(remote_base, "/", rel);
}

TransferResult Push(SshConnection& conn, const std::string& local, const std::string& remote) {
  struct stat st {};
  if (::stat(local.c_str(), &st) != 0) {
    throw Error(kExitNoInput, Cat("cannot read ", local, ": ", std::strerror(errno)));
  }
  bool is_dir = S_ISDIR(st.st_mode);
  if (!is_dir && !S_ISREG(st.st_mode)) {
    throw Error(kExitDataErr, Cat(local, " is neither a file nor a directory"));
  }
  TransferResult result;
  result.directory = is_dir;
  std::string target = Strip(remote);
  RemoteStat there = StatRemote(conn, target);
  if (remote.back() == '/' || there.type == 'd') {
    target = Cat(target == "/" ? "" : target, "/", Basename(Strip(local)));
    there = StatRemote(conn, target);
  }
  result.destination = target;
  if (is_dir && there.type && there.type != 'd') {
    throw Error(kExitCantCreate,
                Cat("cannot copy directory ", local, " over the file ", target, " in the sandbox"),
                {}, {"remove it first, or name another destination"});
  }
  if (!is_dir && there.type == 'd') {
    throw Error(kExitCantCreate,
                Cat("cannot copy file ", local, " over the directory ", target, " in the sandbox"));
  }
  StreamOptions so;
  int status = 0;
  if (is_dir) {
    TempDir tmp;
    std::string archive = Cat(tmp.path(), "/tree.tar");
    RunChecked({"tar", "-c", "-f", archive, "-C", local, "."}, Cat("cannot read ", local), {},
               kExitIoErr);
    FdCloser in(OpenOrThrow(archive, O_RDONLY));
    struct stat ast {};
    ::fstat(in.get(), &ast);
    result.bytes = ast.st_size;
    so.in_fd = in.get();
    status = conn.ExecStream({"sh", "-c", kPutTree, "ss-push", target}, so);
  } else {
    FdCloser in(OpenOrThrow(local, O_RDONLY));
    result.bytes = st.st_size;
    so.in_fd = in.get();
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", st.st_mode & 07777);
    status = conn.ExecStream(
        {"sh", "-c", kPutFile, "ss-push", target, mode, std::to_string(st.st_mtime)}, so);
  }
  if (status != 0) {
    throw Error(kExitRemote, Cat("cannot write ", target, " in the sandbox (status ", status, ")"));
  }
  return result;
}

TransferResult Pull(SshConnection& conn, const std::string& remote, const std::string& local) {
  std::string source = Strip(remote);
  RemoteStat there = StatRemote(conn, source);
  if (!there.type) {
    throw Error(kExitNoInput, Cat("no such file or directory in the sandbox: ", source));
  }
  if (there.type == 'o') {
    throw Error(kExitDataErr, Cat(source, " in the sandbox is neither a file nor a directory"));
  }
  TransferResult result;
  result.directory = there.type == 'd';
  std::string target = Strip(local);
  if (local.back() == '/' || IsDirectory(target)) {
    target = Cat(target == "/" ? "" : target, "/", Basename(source));
  }
  result.destination = target;
  struct stat st {};
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (result.directory && exists && !S_ISDIR(st.st_mode)) {
    throw Error(kExitCantCreate, Cat("cannot copy directory ", source, " over the file ", target));
  }
  if (!result.directory && exists && S_ISDIR(st.st_mode)) {
    throw Error(kExitCantCreate, Cat("cannot copy file ", source, " over the directory ", target));
  }
  StreamOptions so;
  so.in_fd = -1;
  if (result.directory) {
    TempDir tmp;
    std::string archive = Cat(tmp.path(), "/tree.tar");
    {
      FdCloser out(OpenOrThrow(archive, O_WRONLY | O_CREAT | O_TRUNC));
      so.out_fd = out.get();
      int status = conn.ExecStream({"tar", "-c", "-f", "-", "-C", source, "."}, so);
      if (status != 0) {
        throw Error(kExitRemote,
                    Cat("cannot read ", source, " in the sandbox (status ", status, ")"));
      }
    }
    struct stat ast {};
    ::stat(archive.c_str(), &ast);
    result.bytes = ast.st_size;
    MakeDirs(target, 0755);
    RunChecked({"tar", "-x", "-p", "--no-same-owner", "-f", archive, "-C", target},
               Cat("cannot write into ", target), {}, kExitIoErr);
    return result;
  }
  std::string dir = Dirname(target);
  MakeDirs(dir, 0755);
  std::string tmp = Cat(dir, "/.ss-pull.", ::getpid(), ".", Basename(target));
  try {
    {
      FdCloser out(OpenOrThrow(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_EXCL, 0600));
      so.out_fd = out.get();
      int status = conn.ExecStream({"cat", "--", source}, so);
      if (status != 0) {
        throw Error(kExitRemote,
                    Cat("cannot read ", source, " in the sandbox (status ", status, ")"));
      }
      if (::fchmod(out.get(), there.mode) != 0 || ::fsync(out.get()) != 0) {
        throw Error(kExitIoErr, Cat("cannot write ", tmp, ": ", std::strerror(errno)));
      }
    }
    struct timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(there.mtime), 0}};
    ::utimensat(AT_FDCWD, tmp.c_str(), times, 0);
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
      throw Error(kExitIoErr, Cat("cannot write ", target, ": ", std::strerror(errno)));
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  result.bytes = there.size;
  return result;
}

}  // namespace ss
