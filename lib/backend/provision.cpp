#include "provision.hpp"

#include "config.hpp"
#include "error.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  for (const auto& line : SplitLines(text)) out += Cat(prefix, line, "\n");
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

std::string RenderUserData(const ProvisionInput& in) {
  if (in.shell != "bash" && in.shell != "fish") {
    throw Error(kExitConfig, Cat("unknown sandbox shell '", in.shell, "'"), {},
                {"use bash or fish (sandboxes.NAME.shell in config.yaml)"});
  }
  const std::string body = "      ";
  return RenderTemplate(
      RequireResource("cloud-init/user-data"),
      {{"hostname", in.hostname},
       {"shell", in.shell},
       {"shell_bash", Indent(std::string(RequireResource("shell/ss.bash")), body)},
       {"shell_fish", Indent(std::string(RequireResource("shell/ss.fish")), body)},
       {"shell_install", Indent(std::string(RequireResource("shell/install")), body)},
       {"sync_tree", Indent(std::string(RequireResource("shell/sync-tree")), body)},
       {"sync_exclude", Indent(in.sync_exclude, body)},
       {"client_public_key", in.client_public_key},
       {"host_private_key", Indent(in.host_private_key, "    ")},
       {"host_public_key", in.host_public_key},
       {"cdp_port", std::to_string(in.cdp_port)},
       {"extra", in.extra}});
}

std::string RenderMetaData(const ProvisionInput& in) {
  return RenderTemplate(RequireResource("cloud-init/meta-data"),
                        {{"instance_id", in.instance_id}, {"hostname", in.hostname}});
}

std::vector<std::string> SyncExcludes(const Config& config) {
  std::vector<std::string> out = config.List("sync.exclude");
  for (const auto& p : out) {
    if (Trim(p).empty() || p.find('\n') != std::string::npos || p.find('\r') != std::string::npos) {
      throw Error(kExitConfig, Cat("sync.exclude: invalid pattern ", Quoted(p)), {},
                  {"each item is one rsync pattern on one line: ss config set sync.exclude "
                   "'node_modules, .git'"});
    }
  }
  return out;
}

std::string RenderSyncExclude(const std::vector<std::string>& patterns) {
  std::string text =
      "# What syncs of a working copy never copy from ~/project-src/NAME to ~/copy-projects/NAME:\n"
      "# one rsync pattern per line (rsync --exclude-from). Written by ss from sync.exclude in\n"
      "# config.yaml on the host; edit it there (ss config set sync.exclude ...), not here.\n";
  for (const auto& p : patterns) text += p + "\n";
  return text;
}

}  // namespace ss
