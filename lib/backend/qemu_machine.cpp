#include "qemu_machine.hpp"

#include <unistd.h>

#include "backend.hpp"
#include "idmap_view.hpp"
#include "net_fence.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// A word for g_shell_parse_argv, which parses guestfwd's cmd: (single quotes as in sh).
std::string GShellWord(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string QemuViewsDir(const std::string& machine_dir) {
  return ViewsDir(Cat("qemu:", machine_dir));
}

bool QemuNeedsViews(const Json& machine) {
  // Machines made before owners were recorded share as the sandbox user's uid.
  Json owner = machine.value("owner", Json::array({kSandboxUserId, kSandboxUserId}));
  return ::geteuid() == 0 && owner != Json::array({kSandboxUserId, kSandboxUserId});
}

std::string QemuShareSource(const std::string& machine_dir, const Json& machine,
                            const Json& share) {
  return QemuNeedsViews(machine) ? Cat(QemuViewsDir(machine_dir), "/", share.value("tag", ""))
                                 : share.value("source", "");
}

void QemuEnsureViews(const std::string& machine_dir, const Json& machine) {
  if (!QemuNeedsViews(machine)) return;
  Ids owner{machine["owner"][0].get<uid_t>(), machine["owner"][1].get<gid_t>()};
  for (const auto& s : machine.value("shares", Json::array())) {
    // virtiofsd renames, links and changes owners as root: root's writes land as nobody's.
    EnsureView(s.value("source", ""), QemuShareSource(machine_dir, machine, s), owner,
               {kSandboxUserId, kSandboxUserId}, true);
  }
}

std::string QemuOptionValue(const std::string& value) { return DoubleEvery(value, ','); }

// The sandbox's cloud-config, then cloud-init/qemu.yaml: the guest's resolver, and cloud-init off
// from the second boot on.
std::string QemuUserData(const std::string& user_data) {
  std::string out = user_data;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + std::string(RequireResource("cloud-init/qemu.yaml"));
}

std::string QemuNetdev(const QemuLaunch& l) {
  // restrict=on: the guest's TCP connections are refused unless a guestfwd takes them, its UDP
  // (but DHCP) and IPv6 go nowhere, and DHCP names no router and no resolver; SSH still comes
  // in through hostfwd. The guest's ways out are the two guestfwd relays to ss-net, which QEMU
  // spawns per connection with the connection on stdin/stdout (no shell; an absolute path,
  // since QEMU would search PATH).
  auto relay = [&](int port, const char* to) {
    std::string cmd =
        Join({GShellWord(l.relay), "relay", "--sandbox", GShellWord(l.name), "--to", to}, " ");
    return Cat(",guestfwd=tcp:", kQemuEgressAddress, ":", port, "-cmd:", QemuOptionValue(cmd));
  };
  return Cat("user,id=net0,restrict=on,ipv6=off,hostfwd=tcp:127.0.0.1:", l.ssh_port, "-:22",
             relay(kSandboxProxyPort, "proxy"), relay(53, "dns"));
}

std::vector<std::string> QemuArgv(const QemuLaunch& l) {
  std::vector<std::string> a{l.qemu,        "-name",    l.name, "-no-user-config",
                             "-nodefaults", "-display", "none"};
  if (l.accel.kind == "kvm") {
    a.insert(a.end(), {"-accel", "kvm", "-cpu", "host"});
  } else if (l.accel.kind == "hvf") {
    a.insert(a.end(), {"-accel", "hvf", "-cpu", "host"});
  } else {
    a.insert(a.end(), {"-accel", "tcg,thread=multi", "-cpu", "max"});
  }
  a.insert(a.end(), {"-smp", std::to_string(l.cpus), "-m", Cat(l.memory_mib, "M")});
  bool virtiofs = false;
  for (const auto& s : l.shares) virtiofs = virtiofs || !s.vfs_socket.empty();
  if (virtiofs) {
    // vhost-user needs the guest's memory shared with virtiofsd.
    a.insert(a.end(),
             {"-object", Cat("memory-backend-memfd,id=mem,size=", l.memory_mib, "M,share=on"),
              "-numa", "node,memdev=mem"});
  }
  a.insert(a.end(), {"-kernel", l.kernel, "-initrd", l.initrd, "-append", l.append});
  a.insert(a.end(),
           {"-drive",
            Cat("file=", QemuOptionValue(l.disk), ",if=virtio,id=", kQemuDiskId,
                ",format=qcow2,discard=unmap"),
            "-drive", Cat("file=", QemuOptionValue(l.seed), ",if=virtio,format=raw,readonly=on")});
  a.insert(a.end(), {"-netdev", QemuNetdev(l), "-device", "virtio-net-pci,netdev=net0", "-device",
                     "virtio-rng-pci"});
  for (const auto& s : l.shares) {
    if (!s.vfs_socket.empty()) {
      a.insert(a.end(),
               {"-chardev", Cat("socket,id=vfs-", s.tag, ",path=", QemuOptionValue(s.vfs_socket)),
                "-device", Cat("vhost-user-fs-pci,chardev=vfs-", s.tag, ",tag=", s.tag)});
    } else {
      // passthrough keeps the guest's owners on the host, which only root can do; "none" is the
      // same without the chown (files belong to whoever runs QEMU).
      a.insert(a.end(), {"-virtfs", Cat("local,path=", QemuOptionValue(s.source), ",mount_tag=",
                                        s.tag, ",security_model=", l.root ? "passthrough" : "none",
                                        ",id=p9-", s.tag, s.read_only ? ",readonly=on" : "")});
    }
  }
  a.insert(a.end(), {"-serial", Cat("file:", QemuOptionValue(l.console_log)), "-qmp",
                     Cat("unix:", QemuOptionValue(l.qmp_socket), ",server=on,wait=off")});
  return a;
}

int ParseUsernetSshPort(const std::string& info) {
  for (const auto& line : SplitLines(info)) {
    std::vector<std::string> w;
    for (auto& x : Split(line, ' ')) {
      if (!Trim(x).empty()) w.push_back(std::string(Trim(x)));
    }
    // TCP[HOST_FORWARD]  FD  SRC-ADDR  SRC-PORT  DST-ADDR  DST-PORT  RECVQ  SENDQ
    if (w.size() >= 6 && w[0] == "TCP[HOST_FORWARD]" && w[5] == "22") {
      try {
        return std::stoi(w[3]);
      } catch (const std::exception&) {
        return 0;
      }
    }
  }
  return 0;
}

}  // namespace ss
