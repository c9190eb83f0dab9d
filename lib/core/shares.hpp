// Host folders shared with a sandbox beyond the projects folder: the extra mounts of a profile or
// of `--mount HOST:GUEST[:ro]`, and the folder `ss run DIR` (`ss .`) opens at /workspace/NAME.
// All are fixed when the sandbox is made (the backends share folders at creation), recorded with
// it, and checked on the host before anything starts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

inline constexpr const char* kWorkspaceRoot = "/workspace";

// HOST:GUEST or HOST:GUEST:ro, as written (HOST not yet resolved).
struct MountSpec {
  std::string host;
  std::string guest;
  bool read_only = false;
};

// Parses and checks the syntax: GUEST absolute, normalised, free of spaces and control
// characters, not a system tree nor a place ss uses (/home/sandbox/projects, /mnt/deploy, ...).
// nullopt with `problem` set otherwise.
std::optional<MountSpec> ParseMountSpec(std::string_view text, std::string* problem);

// `dir` ("~/x", relative, absolute) as an absolute path with links resolved, checked: it exists,
// is a directory, and holds none of ss's own state (keys, pinned host keys) and is not the
// filesystem root. `what` names it in messages ("deploy folder", "mount source"); `origin` says
// where it was given. With `writable`, the sandbox's user must be able to write there.
// Throws ss::Error 66 (missing, not a directory), 77 (not writable, ss's state inside).
std::string ResolveHostFolder(const std::string& dir, const std::string& what,
                              const std::string& origin, bool writable);

// The name a folder gets in the sandbox (/workspace/NAME) and in its sandbox's name: its base
// name in lowercase letters, digits and '-' ("My App" → "my-app"; "folder" when nothing is
// left).
std::string FolderShareName(const std::string& path);

}  // namespace ss
