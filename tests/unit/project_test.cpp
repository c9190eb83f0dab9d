#include "project.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "fs.hpp"
#include "output.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// ---------------------------------------------------------------------------------------------
// Names

TEST(ProjectName, AcceptsTheSpecsNames) {
  for (const char* good : {"my-app", "ab", "a1", "client-website", "x-", "a-b-c-1-2-3",
                           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwx"}) {
    EXPECT_EQ(ProjectNameProblem(good), std::nullopt) << good;
    EXPECT_TRUE(IsValidProjectName(good)) << good;
  }
}

TEST(ProjectName, SaysWhatIsWrong) {
  struct Case {
    std::string name;
    std::string problem;
  } cases[] = {
      {"", "the name is empty"},
      {"a", "'a' has 1 character: use 2 to 50"},
      {std::string(51, 'a'), Cat("'", std::string(51, 'a'), "' has 51 characters: use 2 to 50")},
      {"My-App", "'My-App' has an uppercase letter 'M': use lowercase"},
      {"my app", "'my app' has a space at position 3"},
      {"my_app", "'my_app' has '_' at position 3"},
      {"my.app", "'my.app' has '.' at position 3"},
      {"../etc", "'../etc' has '.' at position 1"},
      {"a/b", "'a/b' has '/' at position 2"},
      {"1app", "'1app' starts with '1': start with a letter"},
      {"-app", "'-app' starts with '-': start with a letter"},
      {"my--app", "'my--app' has '--': use single hyphens"},
      {"caf\xc3\xa9", "'caf\xc3\xa9' has a character other than a-z, 0-9 and - at position 4"},
      {"a\tb", "'a?b' has a character other than a-z, 0-9 and - at position 2"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ProjectNameProblem(c.name).value_or("(valid)"), c.problem) << c.name;
  }
}

TEST(ProjectName, ValidateThrowsExit65WithTheSpecsMessage) {
  try {
    ValidateProjectName("Bad Name");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
    EXPECT_STREQ(e.what(),
                 "invalid project name: use lowercase letters, numbers, and hyphens only");
    ASSERT_EQ(e.details().size(), 1u);
    EXPECT_EQ(e.details()[0], "'Bad Name' has an uppercase letter 'B': use lowercase");
  }
}

// ---------------------------------------------------------------------------------------------
// Metadata

TEST(ProjectMetadataFormat, WritesTheSpecsShape) {
  ProjectMetadata m;
  m.created = *ParseRfc3339("2025-01-15T10:30:00Z");
  m.last_accessed = *ParseRfc3339("2025-01-15T14:22:00Z");
  EXPECT_EQ(FormatMetadata(m),
            "{\n  \"created\": \"2025-01-15T10:30:00Z\",\n"
            "  \"lastAccessed\": \"2025-01-15T14:22:00Z\"\n}\n");
  m.github_repo = "username/name";
  EXPECT_EQ(FormatMetadata(m),
            "{\n  \"created\": \"2025-01-15T10:30:00Z\",\n"
            "  \"lastAccessed\": \"2025-01-15T14:22:00Z\",\n"
            "  \"githubRepo\": \"username/name\"\n}\n");
  auto back = ParseMetadata(FormatMetadata(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->created, m.created);
  EXPECT_EQ(back->last_accessed, m.last_accessed);
  EXPECT_EQ(back->github_repo, "username/name");
}

TEST(ProjectMetadataFormat, NamesTheProblem) {
  struct Case {
    const char* text;
    const char* problem;
  } cases[] = {
      {"", "the file is empty"},
      {"{", "it is not JSON"},
      {"[]", "it is not a JSON object"},
      {R"({"lastAccessed":"2025-01-15T14:22:00Z"})", "'created' is missing"},
      {R"({"created":"2025-01-15T10:30:00Z"})", "'lastAccessed' is missing"},
      {R"({"created":"yesterday","lastAccessed":"2025-01-15T14:22:00Z"})",
       "'created' is not an RFC 3339 time"},
      {R"({"created":"2025-01-15T10:30:00Z","lastAccessed":5})",
       "'lastAccessed' is not an RFC 3339 time"},
      {R"({"created":"2025-01-15T10:30:00Z","lastAccessed":"2025-01-15T14:22:00Z","githubRepo":1})",
       "'githubRepo' is not a string"},
  };
  for (const auto& c : cases) {
    std::string problem;
    EXPECT_FALSE(ParseMetadata(c.text, &problem).has_value()) << c.text;
    EXPECT_EQ(problem, c.problem) << c.text;
  }
  // Unknown keys and a null githubRepo are fine.
  EXPECT_TRUE(ParseMetadata(
      R"({"created":"2025-01-15T10:30:00Z","lastAccessed":"2025-01-15T14:22:00Z","githubRepo":null,"x":1})"));
}

TEST(ProjectMetadataFormat, GitHubRepoFromRemoteUrls) {
  EXPECT_EQ(GitHubRepoFromUrl("https://github.com/octo/my-api.git"), "octo/my-api");
  EXPECT_EQ(GitHubRepoFromUrl("https://github.com/octo/my-api"), "octo/my-api");
  EXPECT_EQ(GitHubRepoFromUrl("https://github.com/octo/my-api/"), "octo/my-api");
  EXPECT_EQ(GitHubRepoFromUrl("git@github.com:octo/my-api.git"), "octo/my-api");
  EXPECT_EQ(GitHubRepoFromUrl("ssh://git@github.com/octo/my-api.git"), "octo/my-api");
  EXPECT_EQ(GitHubRepoFromUrl("https://gitlab.com/octo/my-api.git"), "");
  EXPECT_EQ(GitHubRepoFromUrl("https://github.com/octo"), "");
  EXPECT_EQ(GitHubRepoFromUrl("https://github.com/octo/a/b"), "");
  EXPECT_EQ(GitHubRepoFromUrl(""), "");
}

// ---------------------------------------------------------------------------------------------
// The store, on a real file system with real git

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
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

class ProjectStoreTest : public ::testing::Test {
 protected:
  ProjectStoreTest()
      : global_("GIT_CONFIG_GLOBAL", "/dev/null"),
        nosystem_("GIT_CONFIG_NOSYSTEM", "1"),
        author_("GIT_AUTHOR_NAME", nullptr),
        author_email_("GIT_AUTHOR_EMAIL", nullptr),
        committer_("GIT_COMMITTER_NAME", nullptr),
        committer_email_("GIT_COMMITTER_EMAIL", nullptr),
        email_("EMAIL", nullptr),
        base_(tmp_.path() + "/projects"),
        store_(base_) {}

  std::string Git(const std::string& dir, std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", dir});
    return RunChecked(args, "git");
  }

  void WriteMetadataFile(const std::string& name, const std::string& text) {
    AtomicWrite(Cat(base_, "/", name, "/.ss/metadata.json"), text);
  }

  void SetLastAccessed(const std::string& name, SystemTime t) {
    ProjectMetadata m;
    m.created = t - hours(1);
    m.last_accessed = t;
    WriteMetadataFile(name, FormatMetadata(m));
  }

  std::vector<std::string> Entries() {
    std::vector<std::string> out;
    auto r = ss::Run({"ls", "-A", base_});
    return SplitLines(r.out);
  }

  TempDir tmp_;
  ScopedEnv global_, nosystem_, author_, author_email_, committer_, committer_email_, email_;
  std::string base_;
  ProjectStore store_;
};

TEST_F(ProjectStoreTest, CreatesTheScaffold) {
  SystemTime before = NowSeconds();
  Project p = store_.Create("my-api");
  EXPECT_EQ(p.name, "my-api");
  EXPECT_EQ(p.path, base_ + "/my-api");
  EXPECT_GE(p.metadata.created, before);
  EXPECT_EQ(p.metadata.created, p.metadata.last_accessed);
  EXPECT_EQ(ReadFile(p.path + "/AGENTS.md"),
            RenderTemplate(RequireResource("lib/templates/AGENTS.md"), {{"name", "my-api"}}));
  EXPECT_NE(ReadFile(p.path + "/AGENTS.md").find("my-api - [Describe your project here]"),
            std::string::npos);
  std::string readme = ReadFile(p.path + "/README.md");
  EXPECT_EQ(readme.rfind("# my-api\n", 0), 0u);
  EXPECT_NE(readme.find("ss my-api\n"), std::string::npos);
  EXPECT_EQ(readme.find("{{"), std::string::npos);
  EXPECT_EQ(ReadFile(p.path + "/.gitignore"),
            "# Super-Sandbox metadata\n.ss/\n\n# Common ignores\n.DS_Store\n.env\n.env.local\n"
            "node_modules/\ndist/\nbuild/\n*.log\n");
  auto m = ParseMetadata(ReadFile(p.path + "/.ss/metadata.json"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->created, p.metadata.created);

  EXPECT_EQ(Git(p.path, {"log", "--format=%an <%ae>|%cn <%ce>|%s"}),
            "Super-Sandbox <noreply@supersandbox.dev>|Super-Sandbox "
            "<noreply@supersandbox.dev>|Initial commit from Super-Sandbox\n");
  EXPECT_EQ(Git(p.path, {"branch", "--show-current"}), "main\n");
  EXPECT_EQ(Git(p.path, {"ls-files"}), ".gitignore\nAGENTS.md\nREADME.md\n");
  EXPECT_EQ(Git(p.path, {"status", "--porcelain"}), "");
  EXPECT_EQ(Entries(), std::vector<std::string>{"my-api"});
}

TEST_F(ProjectStoreTest, CommitsAsTheUserWhenGitKnowsThem) {
  std::string config = tmp_.path() + "/gitconfig";
  AtomicWrite(config, "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n");
  ScopedEnv global("GIT_CONFIG_GLOBAL", config.c_str());
  Project p = store_.Create("ada");
  EXPECT_EQ(Git(p.path, {"log", "--format=%an <%ae>|%cn <%ce>"}),
            "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>\n");
}

TEST_F(ProjectStoreTest, AnIdentityWithoutAnEmailIsNotUsedHalfWay) {
  std::string config = tmp_.path() + "/gitconfig";
  AtomicWrite(config, "[user]\n\tname = Ada Lovelace\n");
  ScopedEnv global("GIT_CONFIG_GLOBAL", config.c_str());
  Project p = store_.Create("ada");
  EXPECT_EQ(Git(p.path, {"log", "--format=%an <%ae>"}),
            "Super-Sandbox <noreply@supersandbox.dev>\n");
}

TEST_F(ProjectStoreTest, AlreadyExistsIsTheSpecsBlock) {
  store_.Create("my-app");
  try {
    store_.Create("my-app");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
    EXPECT_TRUE(e.block());
    EXPECT_EQ(FormatError(e),
              "Error: Project 'my-app' already exists\n\nOpen it:\n  ss my-app\n\n"
              "Or choose a different name:\n  ss new my-app-v2\n");
  }
  EXPECT_EQ(Entries(), std::vector<std::string>{"my-app"});
}

TEST_F(ProjectStoreTest, SuggestsAFreeName) {
  EXPECT_EQ(store_.SuggestFreeName("my-app"), "my-app-v2");
  MakeDirs(base_ + "/my-app-v2");
  EXPECT_EQ(store_.SuggestFreeName("my-app"), "my-app-v3");
  EXPECT_EQ(store_.SuggestFreeName("my-app-v2"), "my-app-v3");
  EXPECT_EQ(store_.SuggestFreeName("tool-v9"), "tool-v10");
  std::string longest(50, 'a');
  std::string suggestion = store_.SuggestFreeName(longest);
  EXPECT_EQ(suggestion, std::string(47, 'a') + "-v2");
  EXPECT_TRUE(IsValidProjectName(suggestion));
}

TEST_F(ProjectStoreTest, NotFoundIsTheSpecsBlock) {
  try {
    throw store_.NotFoundError("foo");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoInput);
    EXPECT_EQ(FormatError(e),
              "Error: Project 'foo' not found\n\nCreate a new project:\n  ss new foo\n");
  }
  store_.Create("client-website");
  store_.Create("my-app");
  SetLastAccessed("client-website", NowSeconds() - hours(24));
  SetLastAccessed("my-app", NowSeconds() - hours(2));
  EXPECT_EQ(FormatError(store_.NotFoundError("foo")),
            "Error: Project 'foo' not found\n\nAvailable projects:\n  my-app\n  client-website\n\n"
            "Create a new project:\n  ss new foo\n");
  for (auto call :
       {+[](ProjectStore& s) { s.Get("foo"); }, +[](ProjectStore& s) { s.Delete("foo"); },
        +[](ProjectStore& s) { s.Touch("foo"); }}) {
    try {
      call(store_);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitNoInput);
      EXPECT_STREQ(e.what(), "Project 'foo' not found");
    }
  }
  EXPECT_EQ(store_.Find("foo"), std::nullopt);
}

TEST_F(ProjectStoreTest, ListsMostRecentFirstWithoutWriting) {
  for (const char* n : {"aa", "bb", "cc", "dd"}) store_.Create(n);
  SystemTime now = NowSeconds();
  SetLastAccessed("aa", now - hours(3));
  SetLastAccessed("bb", now - hours(1));
  SetLastAccessed("cc", now - hours(3));
  SetLastAccessed("dd", now - hours(2));
  std::vector<std::string> names;
  for (const auto& p : store_.List()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bb", "dd", "aa", "cc"}));
  EXPECT_EQ(store_.Names(), (std::vector<std::string>{"aa", "bb", "cc", "dd"}));
  EXPECT_TRUE(store_.Exists("aa"));
  EXPECT_FALSE(store_.Exists("zz"));
  EXPECT_FALSE(store_.Exists("../projects/aa"));
}

TEST_F(ProjectStoreTest, AnEmptyOrMissingStoreListsNothing) {
  EXPECT_TRUE(store_.List().empty());
  EXPECT_TRUE(store_.Names().empty());
  MakeDirs(base_);
  EXPECT_TRUE(store_.List().empty());
}

TEST_F(ProjectStoreTest, SkipsWhatIsNotAProject) {
  store_.Create("real");
  MakeDirs(tmp_.path() + "/outside");
  ASSERT_EQ(::symlink((tmp_.path() + "/outside").c_str(), (base_ + "/link").c_str()), 0);
  MakeDirs(base_ + "/Bad Name");
  AtomicWrite(base_ + "/notes.txt", "hello");
  AtomicWrite(base_ + "/file", "hello");
  MakeDirs(base_ + "/.hidden");
  std::vector<std::string> skipped;
  auto projects = store_.List(&skipped);
  ASSERT_EQ(projects.size(), 1u);
  EXPECT_EQ(projects[0].name, "real");
  ASSERT_EQ(skipped.size(), 2u);
  std::sort(skipped.begin(), skipped.end());
  EXPECT_NE(skipped[0].find("'Bad Name' has an uppercase letter"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("/link': a symbolic link, not a project folder"), std::string::npos)
      << skipped[1];
  EXPECT_EQ(store_.Names(), std::vector<std::string>{"real"});
  EXPECT_FALSE(store_.Exists("link"));
}

TEST_F(ProjectStoreTest, MissingAndCorruptMetadataAreListedThenRebuiltOnAccess) {
  store_.Create("gone");
  store_.Create("bad");
  store_.Create("half");
  std::string gone = base_ + "/gone/.ss/metadata.json";
  ASSERT_EQ(::unlink(gone.c_str()), 0);
  WriteMetadataFile("bad", "{not json");
  WriteMetadataFile("half",
                    R"({"created":"2020-05-01T00:00:00Z","lastAccessed":7,"githubRepo":"o/half"})");
  auto projects = store_.List();
  ASSERT_EQ(projects.size(), 3u);
  for (const auto& p : projects) {
    EXPECT_FALSE(p.rebuilt);
    if (p.name == "gone") {
      EXPECT_EQ(p.state, MetadataState::kMissing);
      EXPECT_EQ(p.problem, ".ss/metadata.json is missing");
    } else if (p.name == "bad") {
      EXPECT_EQ(p.state, MetadataState::kCorrupt);
      EXPECT_EQ(p.problem, ".ss/metadata.json is corrupt: it is not JSON");
    } else {
      EXPECT_EQ(p.state, MetadataState::kCorrupt);
      EXPECT_EQ(p.problem, ".ss/metadata.json is corrupt: 'lastAccessed' is not an RFC 3339 time");
      // What can be kept is kept.
      EXPECT_EQ(FormatRfc3339(p.metadata.created), "2020-05-01T00:00:00Z");
      EXPECT_EQ(p.metadata.github_repo, "o/half");
    }
  }
  // List wrote nothing.
  EXPECT_FALSE(PathExists(gone));
  EXPECT_EQ(ReadFile(base_ + "/bad/.ss/metadata.json"), "{not json");

  Project g = store_.Get("gone");
  EXPECT_TRUE(g.rebuilt);
  EXPECT_EQ(g.state, MetadataState::kMissing);
  EXPECT_TRUE(ParseMetadata(ReadFile(gone)));
  Project h = store_.Get("half");
  EXPECT_TRUE(h.rebuilt);
  auto m = ParseMetadata(ReadFile(base_ + "/half/.ss/metadata.json"));
  ASSERT_TRUE(m);
  EXPECT_EQ(FormatRfc3339(m->created), "2020-05-01T00:00:00Z");
  EXPECT_EQ(m->github_repo, "o/half");
  EXPECT_FALSE(store_.Get("half").rebuilt);  // once
  Project b = store_.Touch("bad");
  EXPECT_TRUE(b.rebuilt);
  for (const auto& p : store_.List()) EXPECT_EQ(p.state, MetadataState::kOk) << p.name;
}

TEST_F(ProjectStoreTest, RebuildFindsTheGitHubRepoInTheOriginRemote) {
  store_.Create("remote");
  Git(base_ + "/remote", {"remote", "add", "origin", "git@github.com:octo/remote.git"});
  RemoveTree(base_ + "/remote/.ss");
  EXPECT_EQ(store_.Get("remote").metadata.github_repo, "octo/remote");
  EXPECT_EQ(ParseMetadata(ReadFile(base_ + "/remote/.ss/metadata.json"))->github_repo,
            "octo/remote");
}

TEST_F(ProjectStoreTest, MetadataLinksAreReplacedNotFollowed) {
  store_.Create("sly");
  std::string secret = tmp_.path() + "/secret";
  AtomicWrite(secret, "do not touch");
  std::string meta = base_ + "/sly/.ss/metadata.json";
  ASSERT_EQ(::unlink(meta.c_str()), 0);
  ASSERT_EQ(::symlink(secret.c_str(), meta.c_str()), 0);
  auto listed = store_.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].state, MetadataState::kCorrupt);
  EXPECT_EQ(listed[0].problem, ".ss/metadata.json is a symbolic link");
  store_.Touch("sly");
  EXPECT_EQ(ReadFile(secret), "do not touch");
  struct stat st;
  ASSERT_EQ(::lstat(meta.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));

  // The same with .ss itself a link to a folder outside.
  MakeDirs(tmp_.path() + "/elsewhere");
  RemoveTree(base_ + "/sly/.ss");
  ASSERT_EQ(::symlink((tmp_.path() + "/elsewhere").c_str(), (base_ + "/sly/.ss").c_str()), 0);
  store_.Touch("sly");
  EXPECT_FALSE(PathExists(tmp_.path() + "/elsewhere/metadata.json"));
  EXPECT_TRUE(IsDirectory(base_ + "/sly/.ss"));
}

TEST_F(ProjectStoreTest, TouchAndGitHubRepoUpdateTheMetadata) {
  store_.Create("t1");
  SetLastAccessed("t1", NowSeconds() - hours(48));
  SystemTime before = NowSeconds();
  Project p = store_.Touch("t1");
  EXPECT_FALSE(p.rebuilt);
  EXPECT_GE(p.metadata.last_accessed, before);
  EXPECT_EQ(store_.Get("t1").metadata.last_accessed, p.metadata.last_accessed);
  store_.SetGitHubRepo("t1", "octo/t1");
  EXPECT_EQ(store_.Get("t1").metadata.github_repo, "octo/t1");
  EXPECT_EQ(store_.UpdateLastAccessed("t1").metadata.github_repo, "octo/t1");
}

TEST_F(ProjectStoreTest, DeleteRemovesEverythingAndNothingOutside) {
  store_.Create("doomed");
  std::string outside = tmp_.path() + "/outside";
  MakeDirs(outside + "/keep");
  AtomicWrite(outside + "/keep/file", "precious");
  ASSERT_EQ(::symlink(outside.c_str(), (base_ + "/doomed/link").c_str()), 0);
  ASSERT_EQ(::symlink((outside + "/keep/file").c_str(), (base_ + "/doomed/file-link").c_str()), 0);
  MakeDirs(base_ + "/doomed/deep/er");
  store_.SetGitHubRepo("doomed", "octo/doomed");
  Project p = store_.Delete("doomed");
  EXPECT_EQ(p.metadata.github_repo, "octo/doomed");
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(ReadFile(outside + "/keep/file"), "precious");
}

TEST_F(ProjectStoreTest, ALinkWithAProjectNameIsNeverFollowed) {
  MakeDirs(base_);
  std::string outside = tmp_.path() + "/outside";
  MakeDirs(outside);
  AtomicWrite(outside + "/file", "precious");
  ASSERT_EQ(::symlink(outside.c_str(), (base_ + "/evil").c_str()), 0);
  for (auto call :
       {+[](ProjectStore& s) { s.Delete("evil"); }, +[](ProjectStore& s) { s.Get("evil"); },
        +[](ProjectStore& s) { s.Touch("evil"); }, +[](ProjectStore& s) { s.Find("evil"); }}) {
    try {
      call(store_);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitNoInput);
      EXPECT_NE(std::string(e.what()).find("'evil' is not a project:"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("is a symbolic link"), std::string::npos);
    }
  }
  try {
    store_.Create("evil");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
  }
  EXPECT_EQ(ReadFile(outside + "/file"), "precious");
  EXPECT_EQ(ss::Run({"ls", "-A", outside}).out, "file\n");
}

TEST_F(ProjectStoreTest, ImportsAFolderWithItsHistory) {
  std::string src = tmp_.path() + "/old-api";
  MakeDirs(src + "/src");
  AtomicWrite(src + "/src/main.c", "int main() {}\n");
  Git(src, {"init", "-q", "-b", "trunk"});
  Git(src, {"add", "."});
  ss::Run(
      {"git", "-C", src, "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-qm", "first"});
  ASSERT_EQ(::symlink("src/main.c", (src + "/link").c_str()), 0);
  Project p = store_.Create("old-api", CreateOptions{src});
  EXPECT_EQ(ReadFile(p.path + "/src/main.c"), "int main() {}\n");
  EXPECT_FALSE(PathExists(p.path + "/AGENTS.md"));
  EXPECT_EQ(Git(p.path, {"log", "--format=%s"}), "first\n");
  EXPECT_EQ(Git(p.path, {"branch", "--show-current"}), "trunk\n");
  EXPECT_EQ(Git(p.path, {"status", "--porcelain"}), "?? link\n");  // .ss/ is excluded
  EXPECT_NE(ReadFile(p.path + "/.git/info/exclude").find("\n.ss/\n"), std::string::npos);
  struct stat st;
  ASSERT_EQ(::lstat((p.path + "/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(ParseMetadata(ReadFile(p.path + "/.ss/metadata.json")));
  // The original is untouched.
  EXPECT_FALSE(PathExists(src + "/.ss"));
  EXPECT_EQ(Git(src, {"status", "--porcelain"}), "?? link\n");

  // A plain folder works too.
  std::string plain = tmp_.path() + "/plain";
  MakeDirs(plain);
  AtomicWrite(plain + "/notes", "n");
  EXPECT_EQ(ReadFile(store_.Create("plain", CreateOptions{plain}).path + "/notes"), "n");
}

TEST_F(ProjectStoreTest, ImportRefusesWhatCannotWork) {
  try {
    store_.Create("x1", CreateOptions{tmp_.path() + "/nope"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoInput);
    EXPECT_EQ(std::string(e.what()),
              Cat("cannot import '", tmp_.path(), "/nope': No such file or directory"));
  }
  AtomicWrite(tmp_.path() + "/file", "x");
  try {
    store_.Create("x1", CreateOptions{tmp_.path() + "/file"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoInput);
    EXPECT_EQ(std::string(e.what()), Cat("cannot import '", tmp_.path(), "/file': not a folder"));
  }
  try {
    store_.Create("x1", CreateOptions{tmp_.path()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
    EXPECT_EQ(std::string(e.what()),
              Cat("cannot import '", tmp_.path(), "': it contains the projects folder"));
  }
  EXPECT_TRUE(Entries().empty());
}

TEST_F(ProjectStoreTest, AFailedCreateLeavesNothing) {
  // git that fails at the commit.
  std::string bin = tmp_.path() + "/bin";
  MakeDirs(bin);
  std::string real_git = FindInPath("git").value();
  AtomicWrite(bin + "/git",
              Cat("#!/bin/sh\n[ \"$1\" = commit ] && { echo 'fatal: disk full' >&2; exit 128; }\n"
                  "exec ",
                  real_git, " \"$@\"\n"),
              0755);
  {
    ScopedEnv path("PATH", Cat(bin, ":/usr/bin:/bin").c_str());
    try {
      store_.Create("broken");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitCantCreate);
      EXPECT_STREQ(e.what(), "cannot create project 'broken': git exited with status 128");
      EXPECT_EQ(e.details(), std::vector<std::string>{"  fatal: disk full"});
    }
  }
  EXPECT_TRUE(Entries().empty());
  {
    ScopedEnv path("PATH", bin.c_str());
    ::unlink((bin + "/git").c_str());
    try {
      store_.Create("nogit");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitUnavailable);
      EXPECT_STREQ(e.what(), "git is not installed");
    }
  }
  EXPECT_TRUE(Entries().empty());
}

TEST_F(ProjectStoreTest, GarbageOfDeadRunsIsCollectedButNotThatOfLiveOnes) {
  MakeDirs(base_ + "/.new-dead.0123456789abcdef/.git/objects");
  AtomicWrite(base_ + "/.new-dead.0123456789abcdef/AGENTS.md", "x");
  MakeDirs(base_ + "/.del-old.0123456789abcdef/sub");
  MakeDirs(base_ + "/.new-live.0123456789abcdef");
  int live = ::open((base_ + "/.new-live.0123456789abcdef").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(live, 0);
  // Another open file description, as another process would have.
  ASSERT_EQ(::flock(live, LOCK_EX), 0);
  EXPECT_EQ(store_.CollectGarbage(), 2);
  EXPECT_EQ(Entries(), std::vector<std::string>{".new-live.0123456789abcdef"});
  ::close(live);
  store_.List();  // collects too, when it sees some
  EXPECT_TRUE(Entries().empty());
}

TEST_F(ProjectStoreTest, ConcurrentCreatesOfOneNameHaveOneWinner) {
  std::atomic<int> ok{0}, exists{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      try {
        ProjectStore(base_).Create("same");
        ++ok;
      } catch (const Error& e) {
        (e.code() == kExitCantCreate && std::string(e.what()) == "Project 'same' already exists"
             ? exists
             : other)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(exists, 7);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(Entries(), std::vector<std::string>{"same"});
  EXPECT_EQ(Git(base_ + "/same", {"log", "--format=%s"}), "Initial commit from Super-Sandbox\n");
}

TEST_F(ProjectStoreTest, SizesAreApparentSizes) {
  store_.Create("sized");
  AtomicWrite(base_ + "/sized/blob", std::string(300000, 'b'));
  auto projects = store_.List();
  auto sizes = store_.Sizes(projects);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_GT(sizes[0], 300000);
  std::string du = ss::Run({"du", "-s", "--apparent-size", "--block-size=1", base_ + "/sized"}).out;
  EXPECT_EQ(Cat(sizes[0]), du.substr(0, du.find('\t')));
}

// Copy-mode projects live in a folder of their own, beside the shared one; a name is in one.
TEST_F(ProjectStoreTest, CopyModeProjectsLiveBesideTheSharedOnes) {
  std::string copies = tmp_.path() + "/copy-projects";
  ProjectStore store(base_, copies);
  Project shared = store.Create("shared-one");
  CreateOptions copy;
  copy.copy = true;
  Project kept = store.Create("kept-apart", copy);
  EXPECT_EQ(shared.path, base_ + "/shared-one");
  EXPECT_EQ(kept.path, copies + "/kept-apart");
  EXPECT_EQ(Entries(), std::vector<std::string>{"shared-one"});
  EXPECT_EQ(store.ProjectPath("kept-apart"), copies + "/kept-apart");
  EXPECT_EQ(store.ProjectPath("not-yet"), base_ + "/not-yet");
  EXPECT_TRUE(store.Exists("kept-apart"));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"kept-apart", "shared-one"}));
  std::vector<Project> all = store.List();
  ASSERT_EQ(all.size(), 2u);
  AtomicWrite(copies + "/kept-apart/blob", std::string(300000, 'b'));
  std::vector<int64_t> sizes = store.Sizes(all);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(sizes[i] > 300000, all[i].name == "kept-apart") << all[i].name;
  }
  // One name, one project: in either folder.
  EXPECT_THROW(store.Create("kept-apart"), Error);
  EXPECT_THROW(store.Create("shared-one", copy), Error);
  ASSERT_TRUE(store.Find("kept-apart"));
  EXPECT_EQ(store.Touch("kept-apart").path, copies + "/kept-apart");
  EXPECT_EQ(store.Delete("kept-apart").path, copies + "/kept-apart");
  EXPECT_FALSE(PathExists(copies + "/kept-apart"));
  EXPECT_EQ(store.Names(), std::vector<std::string>{"shared-one"});
}

TEST_F(ProjectStoreTest, PathsNeedValidNames) {
  EXPECT_EQ(store_.ProjectPath("ok-name"), base_ + "/ok-name");
  for (const char* bad : {"..", "../x", "a/b", "", "/etc"}) {
    EXPECT_THROW(store_.ProjectPath(bad), Error) << bad;
    EXPECT_THROW(store_.Create(bad), Error) << bad;
    EXPECT_THROW(store_.Delete(bad), Error) << bad;
    EXPECT_FALSE(store_.Exists(bad)) << bad;
  }
}

}  // namespace
}  // namespace ss
