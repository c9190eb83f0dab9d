#include "apply_base.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "output.hpp"
#include "resources.hpp"
#include "ssh.hpp"
#include "ssh_command.hpp"
#include "strings.hpp"
#include "working_copy.hpp"

namespace ss {

std::string BaseDir(const std::string& project) { return Cat("/home/sandbox/.ss/bases/", project); }
std::string BaseToken(const std::string& project) {
  return Cat("/home/sandbox/.ss/sync/", project, ".base");
}

void RecordBase(SshConnection& conn, const std::string& sandbox, const std::string& project,
                const std::string& host_dir, const struct timespec& since) {
  std::string base = BaseDir(project);
  auto run = [&](const std::vector<std::string>& argv, const ExecOptions& o = {}) {
    ExecResult r = conn.Exec(argv, o);
    if (r.status != 0) {
      throw Error(kExitRemote,
                  Cat("cannot record what the working copy of '", project, "' was made from: ",
                      argv[1] == "-c" ? argv[3] : argv[0], " exited with status ", r.status),
                  {}, {Trim(r.err).empty() ? "see the sandbox's logs" : std::string(Trim(r.err))});
    }
    return r;
  };
  // Times, not content, decide here: the base's files take the source's times, and this copy is
  // only advisory (sync's check; merges use a file of it only when its digest is the record's).
  run(ScriptArgv("sh", "sync-tree",
                 {"--delete", "--exclude-from", kSyncExcludeFile, SourceDir(project), base}));
  ExecResult listed = run({"find", base, "-mindepth", "1", "!", "-type", "d", "-printf", "%P\\0"});
  std::vector<std::string> paths;
  for (auto& p : Split(listed.out, '\0')) {
    if (!p.empty()) paths.push_back(std::move(p));
  }
  BaseRecord record = BaseRecord::Make(host_dir, paths, since, BaseRecord::Load(sandbox, project));
  ExecOptions o;
  o.input = record.token() + "\n";
  run({"dd", "status=none", Cat("of=", BaseToken(project))}, o);
  record.Save(sandbox, project);
}

BaseRecord CurrentBase(SshConnection& conn, const std::string& sandbox,
                       const std::string& project) {
  BaseRecord record = BaseRecord::Load(sandbox, project);
  if (!record.recorded()) return record;
  ExecResult r = conn.Exec({"cat", BaseToken(project)});
  if (r.status != 0 || Trim(r.out) != record.token()) return BaseRecord();
  return record;
}

bool AdvanceSandboxBase(SshConnection& conn, const std::string& project,
                        const std::vector<std::string>& paths, const std::string& from) {
  if (paths.empty()) return true;
  ExecOptions o;
  o.input = "";
  for (const auto& p : paths) *o.input += p + '\0';
  // Every file named is copied (--ignore-times): its time says nothing about its content.
  ExecResult r = conn.Exec({"rsync", "-a", "--ignore-times", "--from0", "--files-from=-",
                            "--delete-missing-args", "--force", from + "/", BaseDir(project) + "/"},
                           o);
  return r.status == 0;
}

}  // namespace ss
