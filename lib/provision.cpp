#include "provision.hpp"

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

}  // namespace ss
