// Where a symbolic link leads in a destination as it will stand once a crossing (crossing.hpp)
// has written what it admitted: the links already there and the links arriving, in any order of
// the stream, are followed component by component as the kernel follows them, never read as
// text. A link is refused when its way leaves the scope (the destination, or the top folder a
// pull writes), or when it cannot be known to stay inside, now and after any later crossing:
//
// - an absolute target, an empty one, or more than 40 links on the way (the kernel's limit);
// - a '..' that climbs out of something that is not a real folder in the tree as it will stand
//   (a name that is missing, a file, or a link: 'y/..' is where y leads, then up from there);
// - a '..' that climbs back out of where a link led ('y/..' when y is a link), since that link
//   may be pointed elsewhere later;
// - a name the crossing brings more than once in different kinds (a link and a folder), or in
//   spellings that differ only in letter case (one name on a case-insensitive host);
// - a way into a '.git' folder.
//
// Folders are never replaced or removed by a crossing, so what is decided against them holds
// for later crossings; every link a crossing writes passes the same check, so following one
// never leaves the scope.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss {

class FutureTree {
 public:
  // `root`: the open destination. Links must stay below its first `scope_depth` components;
  // `scope_name` says what that is in messages ("the project", "what was pulled").
  FutureTree(int root, size_t scope_depth, std::string scope_name);

  enum class Kind { kDirectory, kFile, kSymlink };
  // One entry the crossing will try to write (a file's folders are made as needed).
  void Add(const std::vector<std::string>& parts, Kind kind, const std::string& target = "");

  // Why a link at `parts` pointing to `target` is refused ("outside the project", "climbs out
  // of 'a/y', ..."), or nullopt when it stays inside.
  std::optional<std::string> LinkRefusal(const std::vector<std::string>& parts,
                                         const std::string& target);

 private:
  enum class State { kNone, kDirectory, kFile, kSymlink, kUnsure };
  struct Node {
    State state = State::kNone;
    std::string target;  // a link's
  };
  struct Arriving {
    int dirs = 0, files = 0, links = 0;
    std::string target;
    std::vector<std::string> spellings;
  };
  Node At(const std::vector<std::string>& path);
  Node OnHost(const std::vector<std::string>& path) const;
  bool RealFolder(const std::vector<std::string>& path);
  std::optional<std::string> Resolve(std::vector<std::string>& at, const std::string& target,
                                     int& hops);

  int root_;
  size_t scope_;
  std::string scope_name_;
  std::map<std::string, Arriving> arriving_;  // by path, letter case folded
  std::map<std::string, Node> seen_;          // At's answers, by exact path
};

}  // namespace ss
