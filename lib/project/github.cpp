#include "github.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "error.hpp"
#include "held_repository.hpp"
#include "json_out.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// The last lines gh printed, indented, as details of an error.
std::vector<std::string> Tail(const ProcessResult& r) {
  std::vector<std::string> lines = SplitLines(r.err.empty() ? r.out : r.err);
  std::vector<std::string> out;
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) {
    if (!Trim(lines[i]).empty()) out.push_back(Cat("  ", lines[i]));
  }
  return out;
}

}  // namespace

bool HostRunner::Has(std::string_view program) { return FindInPath(program).has_value(); }

ProcessResult HostRunner::Run(const std::vector<std::string>& argv) {
  ProcessOptions options;
  options.cwd = dir_;
  // gh prints plain text and never prompts when it is not on a terminal; say so anyway.
  options.env = {{"GH_PROMPT_DISABLED", "1"}, {"NO_COLOR", "1"}};
  // Under sudo, ss (root) leaves projects to the user who ran sudo (see ProjectsOwner); git, run
  // by gh as root, must still accept this one repository.
  // A held repository is named to git (held_repository.hpp), never found through the .git file
  // in the shared folder.
  if (auto held = HeldGitDirOf(dir_)) {
    options.env.insert(options.env.end(), {{"GIT_DIR", *held}, {"GIT_WORK_TREE", dir_}});
  }
  struct stat st;
  if (::stat(dir_.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
    options.env.insert(options.env.end(), {{"GIT_CONFIG_COUNT", "1"},
                                           {"GIT_CONFIG_KEY_0", "safe.directory"},
                                           {"GIT_CONFIG_VALUE_0", dir_}});
  }
  return ss::Run(argv, options);
}

std::vector<std::string> GhRepoCreateArgv(std::string_view name, bool is_private) {
  return {"gh",
          "repo",
          "create",
          std::string(name),
          "--source=.",
          "--remote=origin",
          is_private ? "--private" : "--public",
          "--push"};
}

GitHubRepo CreateGitHubRepo(ProjectRunner& runner, std::string_view name, bool is_private) {
  if (!runner.Has("gh")) {
    throw Error(kExitUnavailable, Cat("gh not found ", runner.Where(), ": install the GitHub CLI"),
                {}, {"see https://cli.github.com, then run 'gh auth login'"});
  }
  ProcessResult auth = runner.Run({"gh", "auth", "status"});
  if (!auth.ok()) {
    throw Error(kExitUnavailable, "gh not authenticated: run 'gh auth login'", Tail(auth));
  }
  ProcessResult created = runner.Run(GhRepoCreateArgv(name, is_private));
  if (!created.ok()) {
    throw Error(kExitFailure, Cat("gh repo create failed (exit status ", created.status, ")"),
                Tail(created));
  }
  ProcessResult view = runner.Run({"gh", "repo", "view", "--json", "nameWithOwner,url"});
  Json doc = Json::parse(view.out, nullptr, false);
  if (!view.ok() || !doc.is_object() || !doc.contains("nameWithOwner") ||
      !doc["nameWithOwner"].is_string() || !doc.contains("url") || !doc["url"].is_string()) {
    throw Error(kExitFailure, "the repository was created, but gh repo view did not say where",
                Tail(view));
  }
  return GitHubRepo{doc["nameWithOwner"].get<std::string>(), doc["url"].get<std::string>()};
}

}  // namespace ss
