#include "tree_size.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "fd.hpp"
#include "fs_at.hpp"
#include "platform.hpp"

namespace ss {
namespace {

struct Task {
  size_t tree;
  std::shared_ptr<Fd> parent;  // an open folder shared by its subfolders' tasks; null: the root
  int parent_fd;
  std::string name;
};

struct TreeState {
  std::atomic<int64_t> bytes{0};
  std::atomic<bool> unreadable{false};
  std::mutex links_mu;
  std::set<std::pair<dev_t, ino_t>> links;  // inodes with more than one link, counted once
};

// Calls fn(name, d_type) for each entry of the open directory `fd` (from its current offset),
// leaving `fd` open: on Linux with no DIR* and no second descriptor per directory, which matters
// when most directories hold a few files (platform.hpp).
template <typename Fn>
void ForEachEntry(int fd, Fn&& fn) {
  platform::DirReader reader(fd);
  while (auto e = reader.Next()) fn(e->name, e->type);
}

class Walker {
 public:
  Walker(const std::vector<TreeRoot>& roots, unsigned threads) : trees_(roots.size()) {
    for (size_t i = 0; i < roots.size(); ++i) {
      stack_.push_back(Task{i, nullptr, roots[i].dir_fd, roots[i].name});
    }
    unsigned n = threads;
    if (n == 0) {
      unsigned hw = std::thread::hardware_concurrency();
      // Enough threads to keep the disk busy when the tree is not cached, few enough that the
      // cached case does not pay for them.
      n = std::clamp(hw == 0 ? 4u : hw * 2, 2u, 16u);
    }
    threads_ = n;
  }

  std::vector<int64_t> Run() {
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads_; ++i) pool.emplace_back([this] { Work(); });
    Work();
    for (auto& t : pool) t.join();
    std::vector<int64_t> out;
    for (auto& t : trees_) out.push_back(t.unreadable ? -1 : t.bytes.load());
    return out;
  }

 private:
  void Work() {
    while (true) {
      Task task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return !stack_.empty() || busy_ == 0; });
        if (stack_.empty()) return;  // nothing queued and nobody can queue more
        task = std::move(stack_.back());
        stack_.pop_back();
        ++busy_;
      }
      std::vector<Task> children;
      Visit(task, children);
      task.parent.reset();
      bool wake;
      {
        std::lock_guard lock(mu_);
        for (auto& c : children) stack_.push_back(std::move(c));
        --busy_;
        wake = !children.empty() || busy_ == 0;
      }
      if (wake) cv_.notify_all();
    }
  }

  void AddFile(TreeState& tree, const struct stat& st) {
    if (st.st_nlink > 1 && !S_ISDIR(st.st_mode)) {
      std::lock_guard lock(tree.links_mu);
      if (!tree.links.insert({st.st_dev, st.st_ino}).second) return;
    }
    tree.bytes += st.st_size;
  }

  // Reads one directory: sizes of its entries, and a task for each subdirectory.
  void Visit(const Task& task, std::vector<Task>& children) {
    TreeState& tree = trees_[task.tree];
    bool is_root = task.parent == nullptr;
    int fd = ::openat(task.parent_fd, task.name.c_str(),
                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      int err = errno;
      if (err == ENOTDIR || err == ELOOP) {
        // Not a directory (or a symbolic link): its own size.
        struct stat st;
        if (::fstatat(task.parent_fd, task.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          AddFile(tree, st);
        }
      } else if (is_root) {
        tree.unreadable = true;
      }
      return;
    }
    auto dir = std::make_shared<Fd>(fd);
    struct stat st;
    if (::fstat(fd, &st) == 0) tree.bytes += st.st_size;
    int64_t bytes = 0;
    ForEachEntry(fd, [&](const char* name, unsigned char type) {
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) return;
      if (type == DT_DIR) {
        children.push_back(Task{task.tree, dir, fd, name});
        return;
      }
      struct stat est;
      if (::fstatat(fd, name, &est, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone meanwhile
      if (S_ISDIR(est.st_mode)) {  // DT_UNKNOWN on file systems without d_type
        children.push_back(Task{task.tree, dir, fd, name});
      } else if (est.st_nlink > 1) {
        AddFile(tree, est);
      } else {
        bytes += est.st_size;
      }
    });
    tree.bytes += bytes;
  }

  std::vector<TreeState> trees_;
  unsigned threads_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Task> stack_;  // LIFO: depth first, so few directories are open at once
  int busy_ = 0;
};

}  // namespace

std::vector<int64_t> TreeSizes(const std::vector<TreeRoot>& roots, unsigned threads) {
  if (roots.empty()) return {};
  Walker walker(roots, threads);
  return walker.Run();
}

int64_t TreeSize(const std::string& path, unsigned threads) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  std::string dir = ".";
  std::string name = trimmed;
  auto slash = trimmed.find_last_of('/');
  if (trimmed == "/") {
    dir = "/";
    name = ".";
  } else if (slash != std::string::npos) {
    dir = slash == 0 ? "/" : trimmed.substr(0, slash);
    name = trimmed.substr(slash + 1);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  auto sizes = TreeSizes({TreeRoot{dfd, name}}, threads);
  ::close(dfd);
  return sizes[0];
}

}  // namespace ss
