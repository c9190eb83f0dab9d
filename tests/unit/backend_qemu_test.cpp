// The QEMU backend's pure parts: acceleration detection, the command line, QEMU's answers, and
// how processes are identified; and its snapshots, on a real qcow2 disk (qemu-img, qemu-io).
#include "backend_qemu.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "error.hpp"
#include "exit_code.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "process.hpp"
#include "qemu_machine.hpp"
#include "qemu_supervisor.hpp"
#include "strings.hpp"

namespace ss {
namespace {

bool Has(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == a && argv[i + 1] == b) return true;
  }
  return false;
}

class FakeHost {
 public:
  FakeHost() {
    MakeDirs(root() + "/proc");
    MakeDirs(root() + "/sys/module");
    MakeDirs(root() + "/dev");
  }
  std::string root() const { return tmp_.path(); }
  void Cpu(const std::string& flags) {
    AtomicWrite(root() + "/proc/cpuinfo",
                Cat("processor\t: 0\nflags\t\t: fpu vme ", flags, " sse2\n"));
  }
  void Kvm() { AtomicWrite(root() + "/dev/kvm", "", 0666); }
  void Module(const std::string& m) { MakeDirs(Cat(root(), "/sys/module/", m)); }

 private:
  TempDir tmp_;
};

TEST(Accel, KvmOnlyWithRealHardwareVirtualization) {
  FakeHost host;
  host.Cpu("vmx");
  host.Kvm();
  host.Module("kvm_intel");
  Accel a = DetectAccel(host.root());
  EXPECT_EQ(a.kind, "kvm");
  EXPECT_TRUE(a.hardware());
}

TEST(Accel, PvmOnlyKvmMeansTcg) {
  FakeHost host;
  host.Cpu("");
  host.Kvm();
  host.Module("kvm_pvm");
  Accel a = DetectAccel(host.root());
  EXPECT_EQ(a.kind, "tcg");
  EXPECT_FALSE(a.hardware());
  EXPECT_NE(a.reason.find("kvm_pvm"), std::string::npos) << a.reason;
}

TEST(Accel, NoDevKvmOrNoVmxMeansTcg) {
  FakeHost host;
  host.Cpu("svm");
  EXPECT_EQ(DetectAccel(host.root()).kind, "tcg");
  EXPECT_NE(DetectAccel(host.root()).reason.find("no /dev/kvm"), std::string::npos);
  FakeHost novmx;
  novmx.Cpu("sse4_2");
  novmx.Kvm();
  EXPECT_EQ(DetectAccel(novmx.root()).kind, "tcg");
  EXPECT_NE(DetectAccel(novmx.root()).reason.find("no VMX/SVM"), std::string::npos);
}

QemuLaunch Launch() {
  QemuLaunch l;
  l.name = "box";
  l.accel = {"tcg", "TCG"};
  l.cpus = 2;
  l.memory_mib = 4096;
  l.kernel = "/i/vmlinuz";
  l.initrd = "/i/initrd.img";
  l.append = "root=/dev/vda rw console=ttyS0";
  l.disk = "/m/disk.qcow2";
  l.seed = "/m/seed.iso";
  l.ssh_port = 40022;
  l.qmp_socket = "/m/qmp.sock";
  l.console_log = "/m/console.log";
  l.relay = "/opt/ss/libexec/ss/ss-net";
  return l;
}

// The netdev's relays, as QEMU hands them to the guestfwd: (address:port, command).
constexpr const char* kRestricted = "user,id=net0,restrict=on,ipv6=off,hostfwd=tcp:127.0.0.1:";

TEST(QemuArgv, TcgWithVirtiofs) {
  QemuLaunch l = Launch();
  l.shares.push_back(
      {"projects", "/home/u/projects", "/home/sandbox/projects", false, "/m/vfs-projects.sock"});
  auto a = QemuArgv(l);
  EXPECT_EQ(a[0], "qemu-system-x86_64");
  EXPECT_TRUE(Has(a, "-accel", "tcg,thread=multi"));
  EXPECT_TRUE(Has(a, "-cpu", "max"));
  EXPECT_TRUE(Has(a, "-smp", "2"));
  EXPECT_TRUE(Has(a, "-m", "4096M"));
  EXPECT_TRUE(Has(a, "-object", "memory-backend-memfd,id=mem,size=4096M,share=on"));
  EXPECT_TRUE(Has(a, "-numa", "node,memdev=mem"));
  EXPECT_TRUE(Has(a, "-kernel", "/i/vmlinuz"));
  EXPECT_TRUE(Has(a, "-append", "root=/dev/vda rw console=ttyS0"));
  EXPECT_TRUE(Has(a, "-drive", "file=/m/disk.qcow2,if=virtio,id=disk,format=qcow2,discard=unmap"));
  EXPECT_TRUE(Has(a, "-drive", "file=/m/seed.iso,if=virtio,format=raw,readonly=on"));
  EXPECT_TRUE(Has(a, "-netdev", QemuNetdev(l)));
  EXPECT_TRUE(Has(a, "-chardev", "socket,id=vfs-projects,path=/m/vfs-projects.sock"));
  EXPECT_TRUE(Has(a, "-device", "vhost-user-fs-pci,chardev=vfs-projects,tag=projects"));
  EXPECT_TRUE(Has(a, "-qmp", "unix:/m/qmp.sock,server=on,wait=off"));
  EXPECT_TRUE(Has(a, "-serial", "file:/m/console.log"));
}

TEST(QemuArgv, KvmAnd9pWithoutRoot) {
  QemuLaunch l = Launch();
  l.accel = {"kvm", "KVM"};
  l.root = false;
  l.shares.push_back({"src", "/a,b", "/home/sandbox/src", true, ""});
  auto a = QemuArgv(l);
  EXPECT_TRUE(Has(a, "-accel", "kvm"));
  EXPECT_TRUE(Has(a, "-cpu", "host"));
  // No virtiofs: no shared memory backend.
  EXPECT_EQ(std::find(a.begin(), a.end(), "-numa"), a.end());
  EXPECT_TRUE(Has(a, "-virtfs",
                  "local,path=/a,,b,mount_tag=src,security_model=none,id=p9-src,readonly=on"));
}

TEST(QemuArgv, PortZeroLetsQemuChoose) {
  QemuLaunch l = Launch();
  l.ssh_port = 0;
  EXPECT_TRUE(QemuNetdev(l).starts_with(Cat(kRestricted, "0-:22,")));
}

TEST(QemuNetdev, RestrictedToSshInAndTheRelaysOut) {
  QemuLaunch l = Launch();
  EXPECT_EQ(QemuNetdev(l),
            Cat(kRestricted,
                "40022-:22,"
                "guestfwd=tcp:10.0.2.100:3128-cmd:'/opt/ss/libexec/ss/ss-net' relay --sandbox "
                "'box' --to proxy,"
                "guestfwd=tcp:10.0.2.100:53-cmd:'/opt/ss/libexec/ss/ss-net' relay --sandbox "
                "'box' --to dns"));
  // libslirp refuses guestfwd on the host's and the DNS address.
  EXPECT_NE(std::string(kQemuEgressAddress), "10.0.2.2");
  EXPECT_NE(std::string(kQemuEgressAddress), "10.0.2.3");
}

TEST(QemuNetdev, TheRelaysPathIsOneWordAndItsCommasAreEscaped) {
  QemuLaunch l = Launch();
  l.relay = "/home/a b/it's,here/ss-net";
  std::string netdev = QemuNetdev(l);
  // g_shell_parse_argv's quoting (as sh's), then QEMU's doubled commas.
  EXPECT_NE(netdev.find("-cmd:'/home/a b/it'\\''s,,here/ss-net' relay --sandbox 'box' --to "
                        "proxy,guestfwd="),
            std::string::npos)
      << netdev;
}

TEST(QemuUserData, TheGuestAsksSsNetsResolverOverTcp) {
  std::string base = "#cloud-config\nhostname: box\nruncmd:\n  - [true]";
  std::string out = QemuUserData(base);
  EXPECT_TRUE(out.starts_with(base + "\n"));
  EXPECT_NE(out.find("\nbootcmd:\n"), std::string::npos);
  EXPECT_NE(out.find(Cat("nameserver ", kQemuEgressAddress, "\\noptions use-vc")),
            std::string::npos)
      << out;
}

TEST(QemuUserData, LaterBootsGoWithoutCloudInit) {
  std::string out = QemuUserData("#cloud-config\nhostname: box\n");
  EXPECT_NE(out.find("  - [touch, /etc/cloud/cloud-init.disabled]\n"), std::string::npos) << out;
}

TEST(QemuArgv, OptionValuesDoubleCommas) {
  EXPECT_EQ(QemuOptionValue("/a,b,,c"), "/a,,b,,,,c");
  EXPECT_EQ(QemuOptionValue("/plain"), "/plain");
}

TEST(Usernet, FindsTheSshForward) {
  std::string info =
      "Hub -1 (net0):\r\n"
      "  Protocol[State]    FD  Source Address  Port   Dest. Address  Port RecvQ SendQ\r\n"
      "  TCP[HOST_FORWARD]   8       127.0.0.1 41049       10.0.2.15    22     0     0\r\n";
  EXPECT_EQ(ParseUsernetSshPort(info), 41049);
  EXPECT_EQ(ParseUsernetSshPort("Hub -1 (net0):\r\n"), 0);
}

TEST(ProcessIdentity, ARecycledPidIsNotTheSameProcess) {
  ProcessId me = IdentifyProcess(::getpid());
  EXPECT_GT(me.start, 0u);
  EXPECT_TRUE(me.Alive());
  ProcessId other = me;
  other.start += 1;
  EXPECT_FALSE(other.Alive());
  EXPECT_FALSE(ProcessId{}.Alive());
}

TEST(QemuPaths, LongDirectoriesGetShortSocketPaths) {
  QemuPaths short_dir("/s/qemu/box");
  EXPECT_EQ(short_dir.Qmp(), "/s/qemu/box/qmp.sock");
  QemuPaths long_dir("/" + std::string(120, 'x') + "/qemu/box");
  EXPECT_LT(long_dir.VfsSocket("projects").size(), 108u);
  EXPECT_NE(long_dir.socket_dir, long_dir.dir);
}

// A stopped machine with a real qcow2 disk (no VM is booted: snapshots work on the disk).
class QemuSnapshots : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDirs(dir(), 0700);
    AtomicWrite(dir() + "/machine.json", R"({"kind": "QemuMachine", "name": "m"})");
    RunChecked({"qemu-img", "create", "-q", "-f", "qcow2", disk(), "4M"}, "qemu-img create");
  }
  std::string dir() const { return state_.path() + "/qemu/m"; }
  std::string disk() const { return dir() + "/disk.qcow2"; }
  // qemu-io on the disk; "read -P X" fails unless every byte is X.
  bool Io(const std::string& command) {
    ProcessResult r = ss::Run({"qemu-io", "-c", command, disk()});
    return r.ok() && r.out.find("failed") == std::string::npos;
  }
  TempDir state_;
};

TEST_F(QemuSnapshots, TakeListRestoreDelete) {
  QemuBackend b(state_.path());
  ASSERT_EQ(b.State("m"), SandboxState::kStopped);
  ASSERT_TRUE(Io("write -P 0xab 0 64k"));
  auto before = std::chrono::system_clock::now() - std::chrono::seconds(5);
  b.TakeSnapshot("m", "clean");
  ASSERT_TRUE(Io("write -P 0xcd 0 64k"));
  ASSERT_TRUE(Io("read -P 0xcd 0 64k"));

  std::vector<Snapshot> snaps = b.Snapshots("m");
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].name, "clean");
  EXPECT_GE(snaps[0].created, before);

  b.RestoreSnapshot("m", "clean");
  EXPECT_TRUE(Io("read -P 0xab 0 64k"));
  EXPECT_FALSE(Io("read -P 0xcd 0 64k"));

  b.DeleteSnapshot("m", "clean");
  EXPECT_TRUE(b.Snapshots("m").empty());
  EXPECT_TRUE(Io("read -P 0xab 0 64k"));  // deleting a snapshot keeps the disk as it is
}

TEST_F(QemuSnapshots, ClearErrors) {
  QemuBackend b(state_.path());
  b.TakeSnapshot("m", "one");
  try {
    b.TakeSnapshot("m", "one");
    FAIL() << "a second snapshot of the same name was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
  }
  for (auto op : {&QemuBackend::RestoreSnapshot, &QemuBackend::DeleteSnapshot}) {
    try {
      (b.*op)("m", "nope");
      FAIL() << "a missing snapshot was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitNoInput);
      EXPECT_STREQ(e.what(), "no snapshot 'nope' of 'm'");
    }
  }
  try {
    b.TakeSnapshot("other", "x");
    FAIL() << "a machine that does not exist was snapshotted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoInput);
  }
  EXPECT_EQ(b.Snapshots("m").size(), 1u);
}

TEST_F(QemuSnapshots, LiveWhileTheMachineRuns) {
  // A running machine: its supervisor holds the lock, and a real QEMU has the disk open (no
  // guest: the block layer is what snapshots work on).
  int fd = ::open((dir() + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::string qmp = QemuPaths(dir()).Qmp();
  ProcessOptions o;
  o.capture_stdout = o.capture_stderr = true;
  pid_t qemu = Spawn({"qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display", "none",
                      "-drive", Cat("file=", disk(), ",if=none,id=disk,format=qcow2"), "-qmp",
                      Cat("unix:", qmp, ",server=on,wait=off")},
                     dir() + "/qemu.log", o);
  for (int i = 0; i < 100 && !PathExists(qmp); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  QemuBackend b(state_.path());
  ASSERT_NE(b.State("m"), SandboxState::kStopped);
  b.TakeSnapshot("m", "live");
  std::vector<Snapshot> snaps = b.Snapshots("m");
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].name, "live");
  try {
    b.RestoreSnapshot("m", "live");
    FAIL() << "a running machine's disk was rolled back under it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitTempFail);
    EXPECT_STREQ(e.what(), "cannot restore a snapshot while 'm' runs");
  }
  b.DeleteSnapshot("m", "live");
  EXPECT_TRUE(b.Snapshots("m").empty());
  ::kill(qemu, SIGKILL);
  WaitPid(qemu);
  ::close(fd);
  b.TakeSnapshot("m", "stopped");
  EXPECT_EQ(b.Snapshots("m").size(), 1u);
}

}  // namespace
}  // namespace ss
