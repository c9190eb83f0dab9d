// A ProjectRunner inside the running sandbox, where the agent's tools (gh) are logged in: the
// project's folder is the same folder, shared at /home/sandbox/projects/<name>.
#pragma once

#include <memory>
#include <string>

#include "github.hpp"
#include "ssh.hpp"
#include "strings.hpp"

namespace ss {

class SandboxRunner : public ProjectRunner {
 public:
  SandboxRunner(std::unique_ptr<SshConnection> conn, std::string sandbox, std::string project);
  bool Has(std::string_view program) override;
  ProcessResult Run(const std::vector<std::string>& argv) override;
  std::string Where() const override { return Cat("in sandbox '", sandbox_, "'"); }

  // The current sandbox's runner when it is running and answers at once (it is never started
  // for this); nullptr otherwise.
  static std::unique_ptr<SandboxRunner> IfRunning(const std::string& project);

 private:
  std::unique_ptr<SshConnection> conn_;
  std::string sandbox_;
  std::string dir_;
};

}  // namespace ss
