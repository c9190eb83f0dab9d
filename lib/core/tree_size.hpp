// The apparent size of directory trees (the sum of st_size, as `du --apparent-size --bytes`
// counts it: every file, directory and symbolic link once, hard links once per tree), walked in
// parallel without ever following a symbolic link.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

struct TreeRoot {
  int dir_fd = -1;   // the directory holding the tree (AT_FDCWD for a path relative to the cwd)
  std::string name;  // the tree's entry in it; a symbolic link here is not followed either
};

// Sizes of each tree, in order, in bytes. Several threads share the work, down to single
// directories, so one big tree is as parallel as many small ones. An entry that disappears
// during the walk counts as 0; a tree that is missing or cannot be read at all is -1.
std::vector<int64_t> TreeSizes(const std::vector<TreeRoot>& roots, unsigned threads = 0);

// One tree, by path (its last component is not followed when it is a symbolic link).
int64_t TreeSize(const std::string& path, unsigned threads = 0);

}  // namespace ss
