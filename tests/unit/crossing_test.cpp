// The crossing from a sandbox to the host: archives made by GNU tar and archives made by hand as
// a hostile sandbox would, written beneath a destination next to a canary tree that must never
// change. Links are judged by where they lead in the tree as it will stand (chains, links that
// arrive after the one that uses them, links already on the host); '.git' and excluded paths
// never land; modes come from the host; sparse files stay sparse.
#include "crossing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "digest.hpp"
#include "error.hpp"
#include "exclude_rules.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"
#include "platform.hpp"
#include "process.hpp"
#include "strings.hpp"
#include "tar_index.hpp"

namespace ss {
namespace {

// A ustar archive built field by field, checksums right unless told otherwise.
class TarBuilder {
 public:
  TarBuilder& Add(const std::string& name, char type, unsigned mode, const std::string& data = "",
                  const std::string& link = "") {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", mode);
    std::snprintf(h + 108, 8, "%07o", 0u);
    std::snprintf(h + 116, 8, "%07o", 0u);
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(data.size()));
    std::snprintf(h + 136, 12, "%011o", 1700000000u);
    h[156] = type;
    std::snprintf(h + 157, 100, "%s", link.c_str());
    std::memcpy(h + 257,
                "ustar\0"
                "00",
                8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (char c : h) sum += static_cast<unsigned char>(c);
    std::snprintf(h + 148, 8, "%06o", sum);
    out_.append(h, 512);
    out_ += data;
    out_.append((512 - data.size() % 512) % 512, '\0');
    return *this;
  }
  TarBuilder& Pax(const std::string& records) { return Add("PaxHeader", 'x', 0644, records); }
  std::string Done() const { return out_ + std::string(1024, '\0'); }

 private:
  std::string out_;
};

mode_t CurrentUmaskForTest() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

std::string Record(const std::string& kv) {
  // "LEN kv\n", LEN counting itself.
  size_t len = kv.size() + 3;
  while (std::to_string(len).size() + kv.size() + 2 != len) ++len;
  return Cat(len, " ", kv, "\n");
}

class CrossingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dest = Cat(tmp.path(), "/dest");
    canary = Cat(tmp.path(), "/canary");
    MakeDirs(dest, 0755);
    MakeDirs(canary, 0755);
    AtomicWrite(Cat(canary, "/secret"), "untouched\n", 0644);
  }

  int Archive(const std::string& bytes) {
    std::string path = Cat(tmp.path(), "/a", ++n, ".tar");
    AtomicWrite(path, bytes, 0600);
    fds.push_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    return fds.back();
  }
  CrossingReport Cross(const std::string& bytes, const CrossingOptions& options = {}) {
    int fd = Archive(bytes);
    return CrossInto(fd, IndexTar(fd, "sandbox 'test'"), dest, options);
  }
  void ExpectCanaryUntouched() {
    EXPECT_EQ(ListDir(canary), std::vector<std::string>{"secret"});
    EXPECT_EQ(ReadFile(Cat(canary, "/secret")), "untouched\n");
  }
  static std::vector<std::string> Refused(const CrossingReport& r) {
    std::vector<std::string> out;
    for (const auto& x : r.refused) out.push_back(x.path);
    return out;
  }
  void TearDown() override {
    for (int fd : fds) ::close(fd);
  }

  TempDir tmp;
  std::string dest, canary;
  std::vector<int> fds;
  int n = 0;
};

TEST_F(CrossingTest, GnuTarTreeArrivesWithoutSetuidBitsDevicesHardLinksOrLinksOut) {
  std::string src = Cat(tmp.path(), "/src");
  MakeDirs(src + "/sub", 0755);
  AtomicWrite(src + "/run.sh", "#!/bin/sh\n", 0755);
  ::chmod((src + "/run.sh").c_str(), 06755);
  AtomicWrite(src + "/sub/data", "data\n", 0640);
  ASSERT_EQ(::symlink("sub/data", (src + "/inside").c_str()), 0);
  ASSERT_EQ(::symlink("../../canary/secret", (src + "/sub/out").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (src + "/abs").c_str()), 0);
  ASSERT_EQ(::mkfifo((src + "/fifo").c_str(), 0644), 0);
  ASSERT_EQ(::link((src + "/sub/data").c_str(), (src + "/hard").c_str()), 0);
  struct timespec t[2] = {{0, UTIME_OMIT}, {1700000000, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (src + "/sub/data").c_str(), t, 0), 0);
  std::string archive = Cat(tmp.path(), "/gnu.tar");
  RunChecked({"tar", "-C", src, "--format=posix", "-cf", archive, "."}, "tar");

  CrossingReport r = Cross(ReadFile(archive));
  struct stat st {};
  ASSERT_EQ(::stat((dest + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u & ~static_cast<unsigned>(CurrentUmaskForTest()));
  ASSERT_EQ(::stat((dest + "/sub/data").c_str(), &st), 0);
  EXPECT_EQ(platform::ModifiedNs(st) % 1000000000, 123456789);
  char link[64] = {};
  ASSERT_GT(::readlink((dest + "/inside").c_str(), link, sizeof link), 0);
  EXPECT_STREQ(link, "sub/data");
  std::vector<std::string> refused = Refused(r);
  std::sort(refused.begin(), refused.end());
  // GNU tar stores the second name of a hard link as the link: which name is which depends on
  // the order it met them.
  ASSERT_EQ(refused.size(), 4u) << Join(refused, " ");
  EXPECT_EQ(refused[0], "./abs");
  EXPECT_EQ(refused[1], "./fifo");
  EXPECT_TRUE(refused[2] == "./hard" || refused[2] == "./sub/data") << refused[2];
  EXPECT_EQ(refused[3], "./sub/out");
  EXPECT_FALSE(PathExists(dest + "/abs"));
  EXPECT_FALSE(PathExists(dest + "/fifo"));
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, ALinkOnTheHostIsNeverWrittenThrough) {
  // The first apply brought a link to a folder outside; the second sends a file beneath it.
  ASSERT_EQ(::symlink(canary.c_str(), (dest + "/link").c_str()), 0);
  CrossingReport r = Cross(TarBuilder()
                               .Add("link/evil", '0', 0644, "x\n")
                               .Add("link/secret", '0', 0644, "owned\n")
                               .Add("link/", '5', 0755)
                               .Done());
  EXPECT_TRUE(r.written.empty());
  EXPECT_EQ(r.refused.size(), 3u);
  EXPECT_NE(r.refused[0].why.find("symbolic link"), std::string::npos) << r.refused[0].why;
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, AFileReplacesALinkOrAHardLinkInsteadOfWritingThroughIt) {
  ASSERT_EQ(::symlink((canary + "/secret").c_str(), (dest + "/a").c_str()), 0);
  ASSERT_EQ(::link((canary + "/secret").c_str(), (dest + "/b").c_str()), 0);
  CrossingReport r =
      Cross(TarBuilder().Add("a", '0', 0644, "new a\n").Add("b", '0', 0644, "new b\n").Done());
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(ReadFile(dest + "/a"), "new a\n");
  EXPECT_EQ(ReadFile(dest + "/b"), "new b\n");
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, AbsoluteAndDotDotNamesAndDevicesAreRefused) {
  CrossingReport r = Cross(TarBuilder()
                               .Add("../canary/secret", '0', 0644, "x")
                               .Add("/tmp/abs", '0', 0644, "x")
                               .Add("a/../../canary/x", '0', 0644, "x")
                               .Add("dev", '3', 0644)
                               .Add("blk", '4', 0644)
                               .Add("ok", '0', 0644, "fine")
                               .Done());
  EXPECT_EQ(r.written, std::vector<std::string>{"ok"});
  EXPECT_EQ(r.refused.size(), 5u);
  EXPECT_FALSE(PathExists(dest + "/dev"));
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, OnlyWhatWasAskedForIsWritten) {
  std::set<std::string> only{"asked"};
  CrossingOptions o;
  o.only = &only;
  CrossingReport r =
      Cross(TarBuilder().Add("asked", '0', 0644, "1").Add(".bashrc", '0', 0644, "2").Done(), o);
  EXPECT_EQ(r.written, std::vector<std::string>{"asked"});
  EXPECT_EQ(Refused(r), std::vector<std::string>{".bashrc"});
}

TEST_F(CrossingTest, APulledTreeTakesItsNewNameAndKeepsItsLinksInside) {
  CrossingOptions o;
  o.rename_from = "tree";
  o.rename_to = "copy";
  o.scope_depth = 1;
  CrossingReport r = Cross(TarBuilder()
                               .Add("tree/", '5', 0755)
                               .Add("tree/f", '0', 0644, "f")
                               .Add("tree/in", '2', 0777, "", "f")
                               .Add("tree/up", '2', 0777, "", "../dest")
                               .Add("other/x", '0', 0644, "x")
                               .Done(),
                           o);
  EXPECT_EQ(ReadFile(dest + "/copy/f"), "f");
  EXPECT_EQ(Refused(r), (std::vector<std::string>{"tree/up", "other/x"}));
}

TEST_F(CrossingTest, PaxRecordsGiveLongNamesAndNanoseconds) {
  std::string longname(150, 'n');
  CrossingReport r = Cross(TarBuilder()
                               .Pax(Record("path=" + longname) + Record("mtime=1700000000.5"))
                               .Add("short", '0', 0644, "long")
                               .Done());
  EXPECT_EQ(r.written, std::vector<std::string>{longname});
  struct stat st {};
  ASSERT_EQ(::stat((dest + "/" + longname).c_str(), &st), 0);
  EXPECT_EQ(platform::ModifiedNs(st) % 1000000000, 500000000);
}

TEST_F(CrossingTest, MalformedArchivesAreTheSandboxsFault) {
  std::string good = TarBuilder().Add("f", '0', 0644, "data").Done();
  std::string bad_sum = good;
  bad_sum[0] = 'g';
  std::string truncated = good.substr(0, 600);
  std::string huge = TarBuilder().Add("f", '0', 0644, "").Done();
  std::memcpy(huge.data() + 124, "77777777777", 11);  // size field, checksum now wrong too
  std::string bad_pax = TarBuilder().Pax("99 path=x\n").Add("f", '0', 0644).Done();
  std::string not_tar(1024, 'z');
  for (const auto& bytes : {bad_sum, truncated, huge, bad_pax, not_tar}) {
    int fd = Archive(bytes);
    try {
      IndexTar(fd, "sandbox 'test'");
      ADD_FAILURE() << "accepted a malformed archive";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitRemote);
      EXPECT_NE(std::string(e.what()).find("sandbox 'test' sent a malformed archive"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(ListDir(dest).empty());
}

TEST_F(CrossingTest, RemoveBeneathNeverFollowsALink) {
  ASSERT_EQ(::symlink(canary.c_str(), (dest + "/link").c_str()), 0);
  EXPECT_FALSE(RemoveBeneath(dest, "link/secret"));
  EXPECT_FALSE(RemoveBeneath(dest, "../canary/secret"));
  AtomicWrite(dest + "/gone", "x", 0644);
  EXPECT_TRUE(RemoveBeneath(dest, "gone"));
  EXPECT_TRUE(RemoveBeneath(dest, "link"));  // the link itself
  ExpectCanaryUntouched();
}

// Random damage to a valid archive: an error naming the sandbox, or entries written beneath the
// destination; never a crash, never a byte outside.
TEST_F(CrossingTest, FuzzedArchivesNeverEscape) {
  std::string good = TarBuilder()
                         .Pax(Record("path=dir/long") + Record("mtime=1.25"))
                         .Add("x", '0', 0644, "abc")
                         .Add("dir/", '5', 0755)
                         .Add("dir/in", '2', 0777, "", "long")
                         .Add("dir/f", '0', 0755, std::string(700, 'q'))
                         .Done();
  std::mt19937 rng(1234);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = good;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < edits; ++i) {
      size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes[at] = "./\0 7x0L5"[rng() % 9];
          break;
        case 2:
          bytes.resize(at);
          break;
        default:
          bytes.insert(at, std::string(rng() % 600, static_cast<char>(rng())));
          break;
      }
      if (bytes.empty()) bytes = "x";
    }
    // Checksums fixed half the time, so the damage reaches past the header check.
    if (round % 2) {
      for (size_t h = 0; h + 512 <= bytes.size(); h += 512) {
        if (bytes.compare(h + 257, 5, "ustar") != 0) continue;
        std::memset(bytes.data() + h + 148, ' ', 8);
        unsigned sum = 0;
        for (size_t i = h; i < h + 512; ++i) sum += static_cast<unsigned char>(bytes[i]);
        std::snprintf(bytes.data() + h + 148, 8, "%06o", sum);
      }
    }
    try {
      Cross(bytes);
    } catch (const Error& e) {
      ASSERT_TRUE(e.code() == kExitRemote || e.code() == kExitIoErr) << e.code() << e.what();
    }
    ::close(fds.back());
    fds.pop_back();
    ::unlink(Cat(tmp.path(), "/a", n, ".tar").c_str());
  }
  ExpectCanaryUntouched();
  std::vector<std::string> names = ListDir(tmp.path());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"canary", "dest"}));
}

// The reproduction: y climbs back to the top (inside), and esc climbs through y as if
// y were a folder. Text says esc stays below a/.../j; the kernel follows y first and lands
// outside. Both orders of the stream.
TEST_F(CrossingTest, ALinkThroughALinkIsFollowedAsTheKernelFollowsIt) {
  std::string deep = "a/b/c/d/e/f/g/h/i/j";
  std::string esc = deep + "/y/../../../../../../../../../../../tmp/target";
  for (bool y_first : {true, false}) {
    TempDir d;
    dest = d.path();
    TarBuilder t;
    if (y_first) t.Add(deep + "/y", '2', 0777, "", "../../../../../../../../../..");
    t.Add("esc", '2', 0777, "", esc);
    if (!y_first) t.Add(deep + "/y", '2', 0777, "", "../../../../../../../../../..");
    CrossingReport r = Cross(t.Done());
    EXPECT_EQ(Refused(r), std::vector<std::string>{"esc"}) << y_first;
    EXPECT_FALSE(PathExists(dest + "/esc"));
    // y itself leads to the top of the project: inside, so it is written.
    char link[64] = {};
    EXPECT_GT(::readlink((dest + "/" + deep + "/y").c_str(), link, sizeof link), 0);
    ASSERT_FALSE(r.refused.empty());
    EXPECT_NE(r.refused[0].why.find("climbing back out of where 'a/b/c/d/e/f/g/h/i/j/y' leads"),
              std::string::npos)
        << r.refused[0].why;
  }
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, ALinkOnTheHostOnTheWayIsFollowed) {
  MakeDirs(dest + "/a/sub", 0755);
  ASSERT_EQ(::symlink("..", (dest + "/a/y").c_str()), 0);            // the top: inside
  ASSERT_EQ(::symlink(canary.c_str(), (dest + "/out").c_str()), 0);  // the user's, outside
  CrossingReport r = Cross(TarBuilder()
                               .Add("esc", '2', 0777, "", "a/y/../canary")
                               .Add("through", '2', 0777, "", "a/y/a/sub")
                               .Add("via-out", '2', 0777, "", "out/secret")
                               .Add("up-out", '2', 0777, "", "a/sub/../../out")
                               .Done());
  EXPECT_EQ(Refused(r), (std::vector<std::string>{"esc", "via-out", "up-out"}));
  char link[64] = {};
  ASSERT_GT(::readlink((dest + "/through").c_str(), link, sizeof link), 0);
  EXPECT_STREQ(link, "a/y/a/sub");
  ExpectCanaryUntouched();
}

TEST_F(CrossingTest, ChainsOfLinksAreFollowedToTheirEnd) {
  CrossingReport r = Cross(TarBuilder()
                               .Add("one", '2', 0777, "", "two")
                               .Add("two", '2', 0777, "", "three")
                               .Add("three", '2', 0777, "", "sub/../..")
                               .Add("sub/", '5', 0755)
                               .Add("in1", '2', 0777, "", "in2/f")
                               .Add("in2", '2', 0777, "", "sub")
                               .Add("loop1", '2', 0777, "", "loop2/x")
                               .Add("loop2", '2', 0777, "", "loop1")
                               .Add("self", '2', 0777, "", "self/x")
                               .Done());
  EXPECT_EQ(Refused(r),
            (std::vector<std::string>{"one", "two", "three", "loop1", "loop2", "self"}));
  for (const auto& x : r.refused) {
    if (x.path == "loop1" || x.path == "self") {
      EXPECT_NE(x.why.find("too many symbolic links"), std::string::npos) << x.why;
    }
  }
  struct stat st {};
  EXPECT_EQ(::lstat((dest + "/in1").c_str(), &st), 0);
  EXPECT_EQ(::lstat((dest + "/in2").c_str(), &st), 0);
}

TEST_F(CrossingTest, AbsoluteTargetsAndDotDotAtTheTopAreRefused) {
  MakeDirs(dest + "/sub/deep", 0755);
  ASSERT_EQ(::symlink("/etc", (dest + "/host-abs").c_str()), 0);
  CrossingReport r = Cross(TarBuilder()
                               .Add("abs", '2', 0777, "", "/etc/passwd")
                               .Add("up", '2', 0777, "", "..")
                               .Add("dot-up", '2', 0777, "", "./../dest")
                               .Add("sub/top", '2', 0777, "", "..")  // the project itself
                               .Add("sub/up2", '2', 0777, "", "../..")
                               .Add("sub/deep/back", '2', 0777, "", "../../sub")
                               .Add("via-abs", '2', 0777, "", "host-abs/passwd")
                               .Add("empty", '2', 0777, "", "")
                               .Done());
  EXPECT_EQ(Refused(r),
            (std::vector<std::string>{"abs", "up", "dot-up", "sub/up2", "via-abs", "empty"}));
  struct stat st {};
  EXPECT_EQ(::lstat((dest + "/sub/top").c_str(), &st), 0);
  EXPECT_EQ(::lstat((dest + "/sub/deep/back").c_str(), &st), 0);
  ExpectCanaryUntouched();
}

// A '..' may climb only out of a real folder: a name that is missing, a file, or one the
// crossing brings twice in different kinds could be a link by the time the kernel looks.
TEST_F(CrossingTest, DotDotOutOfSomethingThatIsNotAFolderIsRefused) {
  AtomicWrite(dest + "/file", "x", 0644);
  // The link that goes through "case" comes first: what stands there is not known until the
  // archive's later entries are written, in an order and with refusals of their own.
  CrossingReport r = Cross(TarBuilder()
                               .Add("use-case", '2', 0777, "", "case/x")
                               .Add("missing", '2', 0777, "", "nope/../file")
                               .Add("through-file", '2', 0777, "", "file/../file")
                               .Add("new/dir/", '5', 0755)
                               .Add("fine", '2', 0777, "", "new/dir/../dir")
                               .Add("Case", '2', 0777, "", "file")
                               .Add("case/", '5', 0755)
                               .Done());
  std::vector<std::string> refused = Refused(r);
  for (const char* bad : {"use-case", "missing", "through-file"}) {
    EXPECT_NE(std::find(refused.begin(), refused.end(), bad), refused.end()) << bad;
  }
  EXPECT_EQ(std::find(refused.begin(), refused.end(), "fine"), refused.end());
}

TEST_F(CrossingTest, ANameGivenTwiceRefusesTheWholeArchive) {
  // What was shown is the last entry of a name; the first would land and stay where the second
  // is refused (a directory over a file). Nothing is written at all.
  AtomicWrite(dest + "/Makefile", "all:\n\techo harmless\n", 0644);
  for (const char* second : {"Makefile/", "Makefile", "./Makefile"}) {
    TarBuilder t;
    t.Add("before.txt", '0', 0644, "b\n").Add("Makefile", '0', 0644, "all:\n\tcurl x | sh\n");
    if (std::string(second).ends_with("/")) {
      t.Add(second, '5', 0755);
    } else {
      t.Add(second, '0', 0644, "all:\n\techo harmless\n");
    }
    try {
      Cross(t.Done());
      ADD_FAILURE() << "crossed: " << second;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitRemote);
      EXPECT_EQ(std::string(e.what()), "the sandbox's archive gives '" + std::string(second) +
                                           "' more than once; nothing was written");
    }
    EXPECT_EQ(ReadFileIfExists(dest + "/Makefile"), "all:\n\techo harmless\n") << second;
    EXPECT_FALSE(PathExists(dest + "/before.txt")) << second;
  }
}

TEST_F(CrossingTest, GitFoldersNeverLandAndNoLinkLeadsIntoOne) {
  MakeDirs(dest + "/.git/hooks", 0755);
  CrossingReport r = Cross(TarBuilder()
                               .Add(".git/hooks/pre-commit", '0', 0755, "#!/bin/sh\n")
                               .Add(".git/config", '0', 0644, "[core]\n")
                               .Add("sub/.GIT/config", '0', 0644, "x")
                               .Add("vendor/.git/", '5', 0755)
                               .Add("hooks", '2', 0777, "", ".git/hooks")
                               .Add("ok", '0', 0644, "ok")
                               .Done());
  EXPECT_EQ(r.written, std::vector<std::string>{"ok"});
  EXPECT_EQ(r.refused.size(), 5u);
  EXPECT_NE(r.refused[0].why.find(".git"), std::string::npos) << r.refused[0].why;
  EXPECT_FALSE(PathExists(dest + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(PathExists(dest + "/sub"));
}

TEST_F(CrossingTest, ExcludedPathsAreRefusedOnTheHost) {
  ExcludeRules rules({"node_modules", "*.log", "/dist", "build/", "secret/**"});
  CrossingOptions o;
  o.exclude = &rules;
  CrossingReport r = Cross(TarBuilder()
                               .Add("node_modules/x/index.js", '0', 0644, "x")
                               .Add("src/app.log", '0', 0644, "x")
                               .Add("dist/app.js", '0', 0644, "x")
                               .Add("src/dist/app.js", '0', 0644, "kept: /dist is anchored")
                               .Add("build", '0', 0644, "kept: build/ is folders only")
                               .Add("out/build/x", '0', 0644, "x")
                               .Add("secret/a/b", '0', 0644, "x")
                               .Done(),
                           o);
  EXPECT_EQ(r.written, (std::vector<std::string>{"src/dist/app.js", "build"}));
  EXPECT_EQ(Refused(r), (std::vector<std::string>{"node_modules/x/index.js", "src/app.log",
                                                  "dist/app.js", "out/build/x", "secret/a/b"}));
  EXPECT_NE(r.refused[0].why.find("excluded by sync.exclude ('node_modules')"), std::string::npos)
      << r.refused[0].why;
}

TEST(ExcludeRules, RsyncPatternsAsRsyncReadsThem) {
  ExcludeRules r({"node_modules", "*.o", "/top", "a/b", "logs/", "x/***", "- tmp*", "+ keep.log",
                  "*.log", "docs/**/gen", "# a comment", ""});
  auto why = [&](const std::string& path, bool dir = false) {
    return r.Why(Split(path, '/'), dir).has_value();
  };
  EXPECT_TRUE(why("node_modules"));
  EXPECT_TRUE(why("pkg/node_modules/x/y.js"));
  EXPECT_TRUE(why("src/main.o"));
  EXPECT_FALSE(why("src/main.oo"));
  EXPECT_TRUE(why("top/y"));
  EXPECT_FALSE(why("sub/top/y"));
  EXPECT_TRUE(why("a/b"));
  EXPECT_TRUE(why("z/a/b/c"));
  EXPECT_FALSE(why("za/b"));
  EXPECT_TRUE(why("logs", true));
  EXPECT_FALSE(why("logs"));
  EXPECT_TRUE(why("logs/today"));
  EXPECT_TRUE(why("x"));
  EXPECT_TRUE(why("x/deep/er"));
  EXPECT_TRUE(why("w/x/y"));  // "x/***" is a path pattern: it matches at any depth
  EXPECT_TRUE(why("tmpfile"));
  EXPECT_FALSE(why("keep.log"));
  EXPECT_TRUE(why("other.log"));
  EXPECT_TRUE(why("docs/a/b/gen"));
  EXPECT_FALSE(why("docs/c/d/src"));
  EXPECT_TRUE(why("docs/a/b/src"));  // "a/b" matches the end of "docs/a/b"
  EXPECT_FALSE(why("# a comment"));
  // '.git' in any case at any depth, whatever the list says.
  EXPECT_TRUE(ExcludeRules().Why({".git", "config"}, false).has_value());
  EXPECT_TRUE(ExcludeRules().Why({"a", ".Git"}, true).has_value());
  EXPECT_FALSE(ExcludeRules().Why({"a", ".gitignore"}, false).has_value());
  EXPECT_FALSE(ExcludeRules().Why({"git"}, false).has_value());
  // "!" clears what came before.
  EXPECT_FALSE(ExcludeRules({"*.o", "!"}).Why({"a.o"}, false).has_value());
}

TEST_F(CrossingTest, ApplyTakesOnlyTheExecutableBitAndKeepsTheHostsMode) {
  mode_t um = CurrentUmaskForTest();
  AtomicWrite(dest + "/private", "old", 0600);
  AtomicWrite(dest + "/was-exec", "old", 0750);
  CrossingOptions o;
  o.exec_bit_only = true;
  CrossingReport r = Cross(TarBuilder()
                               .Add("private", '0', 0755, "new")
                               .Add("was-exec", '0', 0644, "new")
                               .Add("new-exec", '0', 06777, "new")
                               .Add("new-plain", '0', 0000, "new")
                               .Add("odd", '0', 0001, "new")
                               .Add("wide", '0', 0777, "new")
                               .Done(),
                           o);
  EXPECT_TRUE(r.refused.empty());
  auto mode = [&](const std::string& f) {
    struct stat st {};
    EXPECT_EQ(::stat((dest + "/" + f).c_str(), &st), 0);
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode("private"), 0700u);
  EXPECT_EQ(mode("was-exec"), 0640u);
  mode_t plain = 0666 & ~um;
  EXPECT_EQ(mode("new-exec"), plain | ((plain & 0444) >> 2));
  // The sandbox narrows a new file's bits (0000: the owner's alone), never widens them.
  EXPECT_EQ(mode("new-plain"), 0600u & ~um);
  EXPECT_EQ(mode("odd"), (0600u & ~um) | 0100u);  // any x bit makes it executable
  EXPECT_EQ(mode("wide"), plain | ((plain & 0444) >> 2));
}

// GNU tar's sparse 1.0 form: the holes cross as a map and stay holes on the host.
TEST_F(CrossingTest, SparseFilesStaySparse) {
  std::string src = Cat(tmp.path(), "/src");
  MakeDirs(src, 0755);
  {
    Fd f(::open((src + "/holes").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(::pwrite(f.get(), "start", 5, 0), 5);
    ASSERT_EQ(::pwrite(f.get(), "middle", 6, 16 << 20), 6);
    ASSERT_EQ(::ftruncate(f.get(), 32 << 20), 0);
  }
  std::string archive = Cat(tmp.path(), "/sparse.tar");
  RunChecked({"tar", "-C", src, "--format=posix", "--sparse", "-cf", archive, "holes"}, "tar");
  struct stat st {};
  ASSERT_EQ(::stat(archive.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 1 << 20);
  int fd = Archive(ReadFile(archive));
  auto entries = IndexTar(fd, "sandbox 'test'");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].sparse);
  EXPECT_EQ(entries[0].size, 32 << 20);
  EXPECT_EQ(EntrySha256Hex(fd, entries[0], "x"), Sha256FileHex(src + "/holes"));
  CrossingReport r = CrossInto(fd, entries, dest, {});
  EXPECT_EQ(r.written, std::vector<std::string>{"holes"});
  ASSERT_EQ(::stat((dest + "/holes").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32 << 20);
  EXPECT_LT(st.st_blocks * 512, 1 << 20);  // holes, not zeros
  EXPECT_EQ(Sha256FileHex(dest + "/holes"), Sha256FileHex(src + "/holes"));
}

TEST_F(CrossingTest, SparseMapsThatLieAreTheSandboxsFault) {
  auto sparse = [&](const std::string& map, const std::string& data, int64_t real) {
    std::string body = map;
    body.append((512 - body.size() % 512) % 512, '\0');
    body += data;
    return TarBuilder()
        .Pax(Record("GNU.sparse.major=1") + Record("GNU.sparse.minor=0") +
             Record("GNU.sparse.name=f") + Record(Cat("GNU.sparse.realsize=", real)))
        .Add("GNUSparseFile.1/f", '0', 0644, body)
        .Done();
  };
  // The good one first, to show the others fail for their lie alone.
  int good = Archive(sparse("2\n0\n3\n100\n2\n", "abcde", 200));
  auto e = IndexTar(good, "sandbox 'test'");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].path, "f");
  EXPECT_EQ(e[0].size, 200);
  for (const auto& bytes : {
           sparse("2\n0\n3\n100\n3\n", "abcde", 200),  // lengths do not add up
           sparse("2\n100\n3\n0\n2\n", "abcde", 200),  // out of order
           sparse("1\n0\n5\n", "abcde", 4),            // past the end of the file
           sparse("99999999999\n", "", 10),            // a map longer than the archive
           sparse("x\n", "", 10),                      // not a number
           TarBuilder()                                // the older 0.1 form
               .Pax(Record("GNU.sparse.map=0,1") + Record("GNU.sparse.size=1"))
               .Add("f", '0', 0644, "a")
               .Done(),
       }) {
    int fd = Archive(bytes);
    try {
      IndexTar(fd, "sandbox 'test'");
      ADD_FAILURE() << "accepted a lying sparse map";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), kExitRemote) << err.what();
    }
  }
}

}  // namespace
}  // namespace ss
