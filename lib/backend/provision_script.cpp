#include "provision_script.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

#include "error.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// The user the keys are for: the one every image and template calls the sandbox user.
constexpr const char* kUser = "sandbox";
// Beside sshd's own keys (not in /etc/ss, which the sandbox's configuration owns).
constexpr const char* kKeysDir = "/etc/ssh/ss";

[[noreturn]] void Refuse(const std::string& problem) {
  throw Error(kExitSoftware, Cat("internal: the #cloud-config ", problem));
}
[[noreturn]] void Unsupported(const std::string& what) {
  Refuse(Cat("has ", what, ", which the provisioning scripts do not know"));
}

std::string Scalar(const YAML::Node& node, const std::string& what) {
  if (!node || !node.IsScalar()) Refuse(Cat("has no text for ", what));
  return node.as<std::string>();
}

// `cat > PATH` of `content`, byte for byte: a quoted here-document (nothing in it is expanded)
// whose end line is not a line of the content, then the last line break taken off again when
// the content has none.
std::string WriteFile(const std::string& path, const std::string& content) {
  std::string end = "SS_END";
  std::set<std::string> lines;
  for (const auto& line : SplitLines(content)) lines.insert(line);
  while (lines.count(end)) end += "_";
  std::string out = Cat("cat > ", ShellQuote(path), " <<'", end, "'\n", content);
  bool newline = !content.empty() && content.back() == '\n';
  if (!newline) out += "\n";
  out += end + "\n";
  if (!newline) out += Cat("truncate -s -1 ", ShellQuote(path), "\n");
  return out;
}

std::string BootScript(const YAML::Node& config) {
  std::string key_private, key_public;
  std::vector<std::string> authorized;
  if (const YAML::Node keys = config["ssh_keys"]) {
    for (const auto& item : keys) {
      std::string name = item.first.as<std::string>();
      if (name == "ed25519_private") {
        key_private = Scalar(item.second, name);
      } else if (name == "ed25519_public") {
        key_public = Scalar(item.second, name);
      } else {
        Unsupported(Cat("ssh_keys.", name));
      }
    }
  }
  if (key_private.empty() || key_public.empty()) Refuse("has no ed25519 host key");
  for (const auto& key : config["ssh_authorized_keys"]) authorized.push_back(key.as<std::string>());
  if (authorized.empty()) Refuse("has no ssh_authorized_keys");

  std::string dir = kKeysDir;
  std::string s =
      "#!/bin/sh\n"
      "# ss: the sandbox's SSH identity, written before sshd starts on every boot: the host key\n"
      "# ss pinned, and the install's key for the sandbox user (only).\n"
      "set -eu\n"
      "umask 022\n";
  // sshd reads a user's keys as that user: the folders are everyone's to enter.
  s += Cat("mkdir -p ", dir, " /etc/ssh/sshd_config.d\n");
  s += Cat("chmod 0755 ", dir, "\n");
  s += WriteFile(dir + "/ssh_host_ed25519_key.pub", key_public + "\n");
  s += WriteFile(Cat(dir, "/authorized_keys.", kUser), Join(authorized, "\n") + "\n");
  s += "umask 077\n";
  s += WriteFile(dir + "/ssh_host_ed25519_key",
                 key_private.back() == '\n' ? key_private : key_private + "\n");
  s += "umask 022\n";
  // First among the drop-ins, so that its host key is the one sshd offers (an image's own
  // drop-in may name another, which Lima makes anew on every boot).
  s += WriteFile("/etc/ssh/sshd_config.d/01-ss.conf",
                 Cat("# Written by ss on every boot.\n", "HostKey ", dir, "/ssh_host_ed25519_key\n",
                     "AuthorizedKeysFile .ssh/authorized_keys ", dir, "/authorized_keys.%u\n",
                     "PasswordAuthentication no\n", "KbdInteractiveAuthentication no\n"));
  return s;
}

std::string SystemScript(const YAML::Node& config) {
  std::string s =
      "#!/bin/sh\n"
      "# ss: the sandbox's provisioning (the files and commands of its #cloud-config).\n"
      "set -eu\n";
  if (const YAML::Node name = config["hostname"]) {
    // And in /etc/hosts, as the images' own name is (sudo looks it up).
    std::string host = ShellQuote(Scalar(name, "hostname"));
    s += Cat("hostname ", host, "\nprintf '%s\\n' ", host, " > /etc/hostname\n");
    s += Cat("sed -i '/^127\\.0\\.1\\.1[[:space:]]/d' /etc/hosts\n");
    s += Cat("printf '127.0.1.1 %s\\n' ", host, " >> /etc/hosts\n");
  }
  for (const auto& file : config["write_files"]) {
    for (const auto& item : file) {
      std::string key = item.first.as<std::string>();
      if (key != "path" && key != "content" && key != "permissions" && key != "owner") {
        Unsupported(Cat("write_files[].", key));
      }
    }
    std::string path = Scalar(file["path"], "write_files[].path");
    std::string content = file["content"] ? Scalar(file["content"], "write_files[].content") : "";
    std::string mode = file["permissions"] ? Scalar(file["permissions"], "permissions") : "0644";
    std::string owner = file["owner"] ? Scalar(file["owner"], "owner") : "root:root";
    std::string dir = path.substr(0, path.rfind('/'));
    s += Cat("mkdir -p ", ShellQuote(dir.empty() ? "/" : dir), "\n");
    s += WriteFile(path, content);
    s += Cat("chmod ", ShellQuote(mode), " ", ShellQuote(path), "\n");
    s += Cat("chown ", ShellQuote(owner), " ", ShellQuote(path), "\n");
  }
  for (const auto& command : config["runcmd"]) {
    if (command.IsSequence()) {
      std::vector<std::string> argv;
      for (const auto& word : command) argv.push_back(Scalar(word, "runcmd"));
      s += ShellJoin(argv) + "\n";
    } else {
      s += Scalar(command, "runcmd") + "\n";
    }
  }
  return s;
}

}  // namespace

ProvisionScripts CloudConfigToScripts(const std::string& user_data) {
  YAML::Node config;
  try {
    config = YAML::Load(user_data);
  } catch (const YAML::Exception& e) {
    throw Error(kExitSoftware, Cat("internal: the #cloud-config does not parse: ", e.what()));
  }
  static const std::set<std::string> known = {"hostname", "ssh_authorized_keys", "ssh_keys",
                                              "write_files", "runcmd"};
  for (const auto& item : config) {
    std::string key = item.first.as<std::string>();
    if (!known.count(key)) Unsupported(Cat("the key '", key, "'"));
  }
  return {BootScript(config), SystemScript(config)};
}

}  // namespace ss
