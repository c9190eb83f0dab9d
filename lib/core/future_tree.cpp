#include "future_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "crossing.hpp"
#include "exclude_rules.hpp"
#include "fd.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr int kMaxHops = 40;  // the kernel's MAXSYMLINKS

std::string Folded(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

FutureTree::FutureTree(int root, size_t scope_depth, std::string scope_name)
    : root_(root), scope_(scope_depth), scope_name_(std::move(scope_name)) {}

void FutureTree::Add(const std::vector<std::string>& parts, Kind kind, const std::string& target) {
  std::string path;
  for (size_t i = 0; i < parts.size(); ++i) {
    path += (i ? "/" : "") + parts[i];
    Arriving& a = arriving_[Folded(path)];
    if (std::find(a.spellings.begin(), a.spellings.end(), path) == a.spellings.end()) {
      a.spellings.push_back(path);
    }
    if (i + 1 < parts.size() || kind == Kind::kDirectory) {
      ++a.dirs;
    } else if (kind == Kind::kFile) {
      ++a.files;
    } else {
      ++a.links;
      a.target = target;
    }
  }
  seen_.clear();
}

FutureTree::Node FutureTree::OnHost(const std::vector<std::string>& path) const {
  if (path.empty()) return {State::kDirectory, ""};
  Fd parent = OpenParentBeneath(root_, path);
  // A missing folder on the way, or a file or a link (which this crossing replaces, else the
  // walk would have followed it): nothing there.
  if (!parent.ok()) {
    return {errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? State::kNone : State::kUnsure,
            ""};
  }
  struct stat st {};
  const char* name = path.back().c_str();
  if (::fstatat(parent.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return {errno == ENOENT || errno == ENOTDIR ? State::kNone : State::kUnsure, ""};
  }
  if (S_ISDIR(st.st_mode)) return {State::kDirectory, ""};
  if (!S_ISLNK(st.st_mode)) return {State::kFile, ""};
  std::string target(4096, '\0');
  ssize_t n = ::readlinkat(parent.get(), name, target.data(), target.size());
  if (n <= 0 || static_cast<size_t>(n) >= target.size()) return {State::kUnsure, ""};
  target.resize(static_cast<size_t>(n));
  return {State::kSymlink, target};
}

FutureTree::Node FutureTree::At(const std::vector<std::string>& path) {
  std::string key = Join(path, "/");
  if (auto it = seen_.find(key); it != seen_.end()) return it->second;
  Node host = OnHost(path), n;
  auto it = arriving_.find(Folded(key));
  if (it == arriving_.end() || host.state == State::kDirectory || host.state == State::kUnsure) {
    // Nothing arrives, or a folder stays a folder (a crossing never replaces one).
    n = host;
  } else if (const Arriving& a = it->second; a.spellings.size() > 1) {
    n.state = State::kUnsure;
  } else if (a.files + a.links == 0) {
    // Folders are made only where nothing is; a file or a link there stays.
    n = host.state == State::kNone ? Node{State::kDirectory, ""} : host;
  } else if (a.dirs == 0 && a.files + a.links == 1) {
    n = a.links ? Node{State::kSymlink, a.target} : Node{State::kFile, ""};
  } else {
    n.state = State::kUnsure;  // which one stands depends on the order and on other refusals
  }
  seen_[key] = n;
  return n;
}

bool FutureTree::RealFolder(const std::vector<std::string>& path) {
  std::vector<std::string> prefix;
  for (const auto& part : path) {
    prefix.push_back(part);
    if (At(prefix).state != State::kDirectory) return false;
  }
  return true;
}

// Walks `target` from the folder `at` (a path from the root without links), leaving `at` where
// it leads.
std::optional<std::string> FutureTree::Resolve(std::vector<std::string>& at,
                                               const std::string& target, int& hops) {
  if (target.empty()) return std::string("an empty target");
  if (target[0] == '/') return Cat("outside ", scope_name_);
  if (at.size() < scope_) return Cat("outside ", scope_name_);
  size_t floor = scope_;
  std::string through;  // the last link followed
  for (const auto& c : Split(target, '/')) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (at.size() <= floor) {
        if (through.empty()) return Cat("outside ", scope_name_);
        return Cat("climbing back out of where ", Quoted(through),
                   " leads (which a later link could change)");
      }
      if (!RealFolder(at)) {
        return Cat("climbing out of ", Quoted(Join(at, "/")),
                   ", which is not a folder in the tree as it will stand");
      }
      at.pop_back();
      continue;
    }
    if (IsGitName(c)) return std::string("leading into a .git folder");
    at.push_back(c);
    Node n = At(at);
    if (n.state == State::kUnsure) {
      return Cat("going through ", Quoted(Join(at, "/")),
                 ", which this crossing brings more than once or cannot look at");
    }
    if (n.state != State::kSymlink) continue;
    if (++hops > kMaxHops) return std::string("going through too many symbolic links");
    through = Join(at, "/");
    at.pop_back();
    if (auto why = Resolve(at, n.target, hops)) {
      return Cat(why->rfind("through ", 0) == 0 ? "" : Cat("through ", Quoted(through), ": "),
                 *why);
    }
    floor = at.size();
  }
  return std::nullopt;
}

std::optional<std::string> FutureTree::LinkRefusal(const std::vector<std::string>& parts,
                                                   const std::string& target) {
  if (parts.empty()) return Cat("outside ", scope_name_);
  if (target.find('\0') != std::string::npos) return std::string("a target with a NUL");
  std::vector<std::string> at(parts.begin(), parts.end() - 1);
  int hops = 0;
  return Resolve(at, target, hops);
}

}  // namespace ss
