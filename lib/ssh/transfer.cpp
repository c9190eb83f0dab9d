#include "transfer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "size.hpp"
#include "ssh.hpp"
#include "strings.hpp"

namespace ss {
namespace {

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

std::optional<int64_t> Digits(const std::string& s, int base) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c >= '0' + base) return std::nullopt;
    v = v * base + (c - '0');
  }
  return v;
}

// The sandbox's stat(1) answer, checked: it may say anything.
RemoteStat StatRemote(SshConnection& conn, const std::string& path) {
  ExecResult r = conn.Exec(ScriptArgv("sh", "stat.sh", {path}));
  RemoteStat s;
  if (r.status != 0) return s;
  auto w = Split(std::string(Trim(r.out)), ' ');
  auto mode = w.size() == 4 ? Digits(w[1], 8) : std::nullopt;
  auto mtime = w.size() == 4 ? Digits(w[2], 10) : std::nullopt;
  auto size = w.size() == 4 ? Digits(w[3], 10) : std::nullopt;
  if (!mode || !mtime || !size || w[0].size() != 1 ||
      std::string("fdo").find(w[0][0]) == std::string::npos) {
    throw Error(kExitRemote,
                Cat("the sandbox's stat answered something ss does not understand about ", path,
                    ": ", Quoted(std::string(Trim(r.out)).substr(0, 80))));
  }
  s.type = w[0][0];
  s.mode = static_cast<mode_t>(*mode & 07777);
  s.mtime = *mtime;
  s.size = *size;
  return s;
}

}  // namespace

std::string RemotePath(const std::string& path, const std::string& remote_base) {
  if (!path.empty() && path[0] == '/') return path;
  if (path.empty() || path == "." || path == "./") return remote_base;
  std::string rel = path.rfind("./", 0) == 0 ? path.substr(2) : path;
  return Cat(remote_base, "/", rel);
}

int64_t PushTree(SshConnection& conn, const std::string& local, const std::string& remote) {
  TempDir tmp;
  std::string archive = Cat(tmp.path(), "/tree.tar");
  RunChecked({"tar", "-c", "-f", archive, "-C", local, "."}, Cat("cannot read ", local), {},
             kExitIoErr);
  Fd in(OpenOrThrow(archive, O_RDONLY));
  struct stat ast {};
  ::fstat(in.get(), &ast);
  StreamOptions so;
  so.in_fd = in.get();
  int status = conn.ExecStream(ScriptArgv("sh", "put-tree.sh", {remote}), so);
  if (status != 0) {
    throw Error(kExitRemote, Cat("cannot write ", remote, " in the sandbox (status ", status, ")"));
  }
  return ast.st_size;
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
  if (is_dir) {
    result.bytes = PushTree(conn, local, target);
    return result;
  }
  Fd in(OpenOrThrow(local, O_RDONLY));
  result.bytes = st.st_size;
  StreamOptions so;
  so.in_fd = in.get();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", st.st_mode & 07777);
  int status = conn.ExecStream(
      ScriptArgv("sh", "put-file.sh", {target, mode, std::to_string(st.st_mtime)}), so);
  if (status != 0) {
    throw Error(kExitRemote, Cat("cannot write ", target, " in the sandbox (status ", status, ")"));
  }
  return result;
}

Error TooLarge(const ArchiveLimit& limit, std::string_view what) {
  return Error(
      kExitDataErr,
      Cat(limit.source, " sent more than ", FormatSizeHuman(limit.bytes), " (", what,
          "), the most sync.max_size lets a sandbox send at once"),
      {},
      {"nothing was written on the host", "raise the limit: ss config set sync.max_size 4GB",
       "or leave large files out of what crosses: ss config set sync.exclude ..."});
}

ReceivedArchive::ReceivedArchive(SshConnection& conn, const std::vector<std::string>& tar_argv,
                                 const std::optional<std::string>& input, ArchiveLimit limit)
    : tmp_(SpoolDir()), limit_(std::move(limit)) {
  std::string archive = Cat(tmp_.path(), "/archive.tar"), err = Cat(tmp_.path(), "/stderr");
  fd_ = Fd(OpenOrThrow(archive, O_RDWR | O_CREAT | O_EXCL));
  Fd err_fd(OpenOrThrow(err, O_RDWR | O_CREAT | O_EXCL));
  std::optional<Fd> in;
  StreamOptions so;
  so.in_fd = -1;
  if (input) {
    std::string list = Cat(tmp_.path(), "/stdin");
    AtomicWrite(list, *input, 0600);
    in.emplace(OpenOrThrow(list, O_RDONLY));
    so.in_fd = in->get();
  }
  so.out_fd = fd_.get();
  so.err_fd = err_fd.get();
  so.max_err = 64 << 10;  // for the message; the rest is dropped
  so.max_output = limit_.bytes;
  so.out_over_limit = std::make_shared<bool>(false);
  status_ = conn.ExecStream(tar_argv, so);
  if (*so.out_over_limit) throw TooLarge(limit_, "an archive");
  error_ = ReadFile(err);
}

const std::vector<TarEntry>& ReceivedArchive::Index(const std::string& source) {
  if (entries_) return *entries_;
  std::vector<TarEntry> entries = IndexTar(fd_.get(), source);
  if (limit_.bytes >= 0) {
    int64_t total = 0;
    for (const auto& e : entries) {
      if (e.type != TarEntry::kFile) continue;
      if (e.size > limit_.bytes - total)
        throw TooLarge(limit_, "files of that size, holes included");
      total += e.size;
    }
  }
  entries_ = std::move(entries);
  return *entries_;
}

TransferResult Pull(SshConnection& conn, const std::string& remote, const std::string& local,
                    const ArchiveLimit& limit) {
  const std::string& source = limit.source;
  std::string path = Strip(remote);
  if (path == "/") {
    throw Error(kExitUsage, "cannot pull the whole sandbox ('/')", {},
                {"name a file or directory in it"});
  }
  std::string name = Basename(path);
  // Sparse files stay sparse (--sparse): their holes cross as a map, not as zeros.
  ReceivedArchive archive(conn,
                          {"tar", "-C", Dirname(path), "--format=posix", "--hard-dereference",
                           "--sparse", "-cf", "-", "--", name},
                          std::nullopt, limit);
  std::string said = std::string(Trim(archive.error()));
  if (archive.status() != 0) {
    if (said.find("No such file or directory") != std::string::npos) {
      throw Error(kExitNoInput, Cat("no such file or directory in the sandbox: ", path));
    }
    if (said.find("file changed as we read it") != std::string::npos) {
      throw Error(kExitTempFail, Cat(path, " in the sandbox changed while it was read"), {},
                  {"try again once it stops changing"});
    }
    throw Error(kExitRemote,
                Cat("cannot read ", path, " in the sandbox (tar exited with status ",
                    archive.status(), ")"),
                {}, {said.empty() ? "see the sandbox's logs" : said});
  }
  std::vector<TarEntry> entries = archive.Index(source);
  auto top = entries.empty() ? std::nullopt : SafeComponents(entries.front().path);
  if (!top || top->size() != 1 || (*top)[0] != name) {
    throw Error(kExitRemote,
                Cat(source, " sent an archive that does not start with ", Quoted(name)), {},
                {"nothing was written on the host; the sandbox's tar may have been replaced"});
  }
  const TarEntry& first = entries.front();
  if (first.type == TarEntry::kSymlink) {
    throw Error(kExitDataErr,
                Cat(path, " in the sandbox is a symbolic link to ", Quoted(first.link)), {},
                {"pull what it points to"});
  }
  if (first.type != TarEntry::kFile && first.type != TarEntry::kDirectory) {
    throw Error(kExitDataErr, Cat(path, " in the sandbox is neither a file nor a directory"));
  }
  TransferResult result;
  result.directory = first.type == TarEntry::kDirectory;
  if (!result.directory) entries.resize(1);
  std::string target = Strip(local);
  if (local.back() == '/' || IsDirectory(target)) {
    target = Cat(target == "/" ? "" : target, "/", name);
  }
  result.destination = target;
  std::string parent = Dirname(target);
  if (!IsDirectory(parent)) {
    throw Error(kExitNoInput, Cat("cannot write ", target, ": no such directory ", parent), {},
                {Cat("make it first (mkdir -p ", parent, "), or name another destination")});
  }
  struct stat st {};
  bool exists = ::lstat(target.c_str(), &st) == 0;
  if (result.directory && exists && !S_ISDIR(st.st_mode)) {
    throw Error(kExitCantCreate, Cat("cannot copy directory ", path, " over the file ", target));
  }
  if (!result.directory && exists && S_ISDIR(st.st_mode)) {
    throw Error(kExitCantCreate, Cat("cannot copy file ", path, " over the directory ", target));
  }
  CrossingOptions options;
  options.rename_from = name;
  options.rename_to = Basename(target);
  options.scope_depth = 1;
  CrossingReport report = CrossInto(archive.fd(), entries, parent, options);
  result.bytes = report.bytes;
  result.refused = std::move(report.refused);
  return result;
}

}  // namespace ss
