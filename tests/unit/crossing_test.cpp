// The crossing from a sandbox to the host: archives made by GNU tar and archives made by hand as
// a hostile sandbox would, written beneath a destination next to a canary tree that must never
// change.
#include "crossing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "error.hpp"
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

}  // namespace
}  // namespace ss
