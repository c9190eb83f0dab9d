// GitHub repositories for projects, through the GitHub CLI (gh), which owns the login.
//
// gh runs where it is logged in: today on the host, in the project's folder; once sandboxes
// exist, inside the sandbox in /home/sandbox/projects/<name> (the same folder, shared). The
// caller chooses by passing a ProjectRunner; this file only knows the gh commands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "process.hpp"

namespace ss {

// Runs a command in one project's folder, somewhere.
class ProjectRunner {
 public:
  virtual ~ProjectRunner() = default;
  // Whether `program` can be run at all there.
  virtual bool Has(std::string_view program) = 0;
  // Runs argv with the project's folder as the working directory; stdout and stderr captured.
  virtual ProcessResult Run(const std::vector<std::string>& argv) = 0;
  // Where, for messages: "on the host", "in sandbox 'work'".
  virtual std::string Where() const = 0;
};

// On this machine, in `dir`.
class HostRunner : public ProjectRunner {
 public:
  explicit HostRunner(std::string dir) : dir_(std::move(dir)) {}
  bool Has(std::string_view program) override;
  ProcessResult Run(const std::vector<std::string>& argv) override;
  std::string Where() const override { return "on the host"; }

 private:
  std::string dir_;
};

struct GitHubRepo {
  std::string name_with_owner;  // "octocat/my-api"
  std::string url;              // "https://github.com/octocat/my-api"
};

// gh repo create NAME --source=. --remote=origin --public|--private --push
std::vector<std::string> GhRepoCreateArgv(std::string_view name, bool is_private);

// Checks that gh is there and logged in (`gh auth status`), creates the repository from the
// project's git repository (origin is set and main pushed), and asks gh for its name and URL.
// Throws ss::Error: 69 when gh is missing or not logged in ("gh not authenticated: run 'gh auth
// login'"), 1 when GitHub refuses (gh's own words as details).
GitHubRepo CreateGitHubRepo(ProjectRunner& runner, std::string_view name, bool is_private);

}  // namespace ss
