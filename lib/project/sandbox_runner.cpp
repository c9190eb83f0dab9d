#include "sandbox_runner.hpp"

#include "config.hpp"
#include "held_repository.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "strings.hpp"

namespace ss {

SandboxRunner::SandboxRunner(std::unique_ptr<SshConnection> conn, std::string sandbox,
                             std::string project)
    : conn_(std::move(conn)),
      sandbox_(std::move(sandbox)),
      dir_(Cat("/home/sandbox/projects/", project)) {}

bool SandboxRunner::Has(std::string_view program) {
  return conn_->Exec(ScriptArgv("sh", "has-command.sh", {std::string(program)})).status == 0;
}

ProcessResult SandboxRunner::Run(const std::vector<std::string>& argv) {
  ExecOptions options;
  options.cwd = dir_;
  ExecResult r = conn_->Exec(argv, options);
  return ProcessResult{r.status, false, std::move(r.out), std::move(r.err)};
}

std::unique_ptr<SandboxRunner> SandboxRunner::IfRunning(const std::string& project) {
  try {
    Sandbox sandbox(ResolveSandboxName(""), Config::Load());
    if (!sandbox.exists()) return nullptr;
    auto conn = sandbox.TryConnect();
    if (!conn) return nullptr;
    // A held repository's checkout leads to the sandbox's own repository: made first.
    if (HeldGitDirOf(Cat(ProjectsDir(), "/", project)))
      RefreshSandboxRepository(RunOver(*conn), project);
    return std::make_unique<SandboxRunner>(std::move(conn), sandbox.name(), project);
  } catch (const Error& e) {
    Debug(Cat("gh: not in the sandbox: ", e.what()));
    return nullptr;
  }
}

}  // namespace ss
