#include "ssh_keys.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <thread>

#include "error.hpp"
#include "fs.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// "type base64" of a public key line.
std::string KeyPart(const std::string& line) {
  auto f = Split(std::string(Trim(line)), ' ');
  return f.size() >= 2 ? f[0] + " " + f[1] : line;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(SshKeys, GeneratesOpenSshEd25519Keys) {
  TempDir dir;
  KeyPair pair = GenerateEd25519Key("me@box");
  EXPECT_EQ(pair.private_key.rfind("-----BEGIN OPENSSH PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(pair.private_key.back(), '\n');
  EXPECT_EQ(pair.public_key.rfind("ssh-ed25519 AAAA", 0), 0u);
  EXPECT_EQ(pair.public_key.substr(pair.public_key.size() - 7), " me@box");
  std::string path = dir.path() + "/id";
  WriteKeyPair(path, pair);
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(path + ".pub"), 0644u);
  EXPECT_EQ(ReadFile(path + ".pub"), pair.public_key + "\n");
  // OpenSSH reads the private key and derives the same public key.
  ProcessResult r = ss::Run({"ssh-keygen", "-y", "-f", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(KeyPart(r.out), KeyPart(pair.public_key));
  EXPECT_EQ(KeyPart(ReadPublicKey(path)), KeyPart(pair.public_key));
  EXPECT_EQ(ReadPublicKey(path + ".pub"), pair.public_key);
  EXPECT_NE(GenerateEd25519Key("x").public_key.substr(0, 60), pair.public_key.substr(0, 60));
}

TEST(SshKeys, FingerprintMatchesSshKeygen) {
  TempDir dir;
  KeyPair pair = GenerateEd25519Key("c");
  WriteKeyPair(dir.path() + "/k", pair);
  ProcessResult r = ss::Run({"ssh-keygen", "-l", "-E", "sha256", "-f", dir.path() + "/k.pub"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Split(r.out, ' ')[1], KeyFingerprint(pair.public_key));
  EXPECT_THROW(KeyFingerprint("ssh-ed25519 notbase64"), Error);
}

TEST(SshKeys, EnsureClientKeyCreatesOnceUnderALock) {
  TempDir dir;
  ScopedEnv home("SS_HOME", dir.path() + "/home");
  std::vector<std::string> paths(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < paths.size(); ++i) {
    threads.emplace_back([&, i] { paths[i] = EnsureClientKey(); });
  }
  for (auto& t : threads) t.join();
  std::string path = dir.path() + "/home/.ss/id_ed25519";
  for (const auto& p : paths) EXPECT_EQ(p, path);
  EXPECT_EQ(ModeOf(dir.path() + "/home/.ss"), 0700u);
  EXPECT_EQ(ModeOf(path), 0600u);
  std::string key = ReadFile(path);
  EXPECT_EQ(EnsureClientKey(), path);
  EXPECT_EQ(ReadFile(path), key);
  // A lost .pub comes back from the private key.
  ::unlink((path + ".pub").c_str());
  EnsureClientKey();
  EXPECT_EQ(KeyPart(ReadFile(path + ".pub")), KeyPart(ReadPublicKey(path)));
}

TEST(SshKeys, EnsureClientKeyRefusesAKeyOthersCanRead) {
  TempDir dir;
  ScopedEnv home("SS_HOME", dir.path());
  std::string path = EnsureClientKey();
  ::chmod(path.c_str(), 0644);
  try {
    EnsureClientKey();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoPerm);
    EXPECT_EQ(std::string(e.what()), Cat("unsafe permissions on the private key '", path, "'"));
  }
}

TEST(SshKeys, KnownHostsNames) {
  EXPECT_EQ(KnownHostsName("127.0.0.1", 2222), "[127.0.0.1]:2222");
  EXPECT_EQ(KnownHostsName("box.local", 22), "box.local");
}

TEST(SshKeys, PinReplacesOnlyTheEndpointsEntry) {
  TempDir dir;
  std::string file = dir.path() + "/sub/known_hosts";
  KeyPair a = GenerateEd25519Key("a"), b = GenerateEd25519Key("b"), c = GenerateEd25519Key("c");
  MakeDirs(dir.path() + "/sub");
  AtomicWrite(file, Cat("# comment\n", "other.host ", KeyPart(c.public_key), "\n",
                        "shared,[127.0.0.1]:2200 ", KeyPart(c.public_key), "\n",
                        "@cert-authority *.x ", KeyPart(c.public_key), "\n"));
  PinHostKey(file, "127.0.0.1", 2200, a.public_key);
  PinHostKey(file, "127.0.0.1", 2200, b.public_key);
  EXPECT_EQ(ReadFile(file),
            Cat("# comment\n", "other.host ", KeyPart(c.public_key), "\n", "shared ",
                KeyPart(c.public_key), "\n", "@cert-authority *.x ", KeyPart(c.public_key), "\n",
                "[127.0.0.1]:2200 ", KeyPart(b.public_key), "\n"));
  EXPECT_EQ(PinnedHostKeys(file, "127.0.0.1", 2200),
            std::vector<std::string>{KeyPart(b.public_key)});
  EXPECT_EQ(PinnedHostKeys(file, "127.0.0.1", 2201), std::vector<std::string>{});
  EXPECT_TRUE(UnpinHostKey(file, "127.0.0.1", 2200));
  EXPECT_FALSE(UnpinHostKey(file, "127.0.0.1", 2200));
  EXPECT_EQ(PinnedHostKeys(file, "127.0.0.1", 2200), std::vector<std::string>{});
  EXPECT_EQ(PinnedHostKeys(file, "other.host", 22),
            std::vector<std::string>{KeyPart(c.public_key)});
  EXPECT_THROW(PinHostKey(file, "h", 22, "not a key"), Error);
}

TEST(SshKeys, HashedEntriesAreFoundAndReplaced) {
  TempDir dir;
  std::string file = dir.path() + "/known_hosts";
  KeyPair a = GenerateEd25519Key("a"), b = GenerateEd25519Key("b");
  PinHostKey(file, "10.0.0.7", 2222, a.public_key);
  PinHostKey(file, "keep.me", 22, b.public_key);
  ProcessResult r = ss::Run({"ssh-keygen", "-H", "-f", file});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(ReadFile(file).find("10.0.0.7"), std::string::npos);
  EXPECT_EQ(PinnedHostKeys(file, "10.0.0.7", 2222),
            std::vector<std::string>{KeyPart(a.public_key)});
  PinHostKey(file, "10.0.0.7", 2222, b.public_key);
  EXPECT_EQ(PinnedHostKeys(file, "10.0.0.7", 2222),
            std::vector<std::string>{KeyPart(b.public_key)});
  EXPECT_EQ(PinnedHostKeys(file, "keep.me", 22), std::vector<std::string>{KeyPart(b.public_key)});
  EXPECT_EQ(SplitLines(ReadFile(file)).size(), 2u);
}

TEST(SshKeys, SandboxHostKeyIsWrittenAndPinned) {
  TempDir dir;
  KeyPair host = CreateSandboxHostKey(dir.path() + "/vm/ssh_host_ed25519_key",
                                      dir.path() + "/known_hosts", "127.0.0.1", 40022);
  EXPECT_EQ(ModeOf(dir.path() + "/vm/ssh_host_ed25519_key"), 0600u);
  EXPECT_EQ(ModeOf(dir.path() + "/vm"), 0700u);
  EXPECT_EQ(ReadFile(dir.path() + "/known_hosts"),
            Cat("[127.0.0.1]:40022 ", KeyPart(host.public_key), "\n"));
  // OpenSSH finds the entry too.
  ProcessResult r =
      ss::Run({"ssh-keygen", "-F", "[127.0.0.1]:40022", "-f", dir.path() + "/known_hosts"});
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace ss
