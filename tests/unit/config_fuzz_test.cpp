// The config parser and editor against damaged files: a corpus of malformed variants of a real
// config.yaml (every kind of damage ss-config(5) names, generated so that it is the same on
// every run) and a fixed number of random mutations. Each file either loads or is refused with
// 78 and file:line:column; an edit either leaves the file byte for byte as it was or changes
// exactly the key it set. Run under ASan and UBSan with the rest of the unit tests.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "config.hpp"
#include "config_edit.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "strings.hpp"

namespace ss {
namespace {

const char* kGood = R"(# my settings
version: 1
backend: docker
vm:
  cpus: 2
  memory: 4GB
agent:
  command: "claude --dangerously-skip-permissions"
updates:
  check: true
sync:
  exclude: [node_modules, '.git', "dist"]
secrets:
  - GH_TOKEN
sandboxes:
  work:
    backend: lxd
    secrets: [NPM_TOKEN]
projects:
  app:
    mode: copy
)";

std::vector<std::string> Corpus() {
  std::string good = kGood;
  std::vector<std::string> out;
  // Cut anywhere.
  for (size_t at = 1; at < good.size(); at += 7) out.push_back(good.substr(0, at));
  // A quote, a bracket, a tab, a colon or a tag dropped into every line.
  auto lines = SplitLines(good);
  for (size_t i = 0; i < lines.size(); ++i) {
    for (const char* bad : {"\"", "'", "[", "{", "\t", ": :", "!weird ", "&a ", "*a", "%"}) {
      auto copy = lines;
      copy[i].insert(copy[i].size() / 2, bad);
      out.push_back(Join(copy, "\n") + "\n");
    }
  }
  // Whole-file damage.
  out.push_back(good + "---\nversion: 1\n");
  out.push_back(good + "backend: lxd\n");
  out.push_back(good + "vm:\n  cpus: 3\n");
  out.push_back("version: 1\nagent:\n  command: \"claude --x\nupdates:\n  check: false\n");
  out.push_back("version: 1\nagent:\n  command: 'it''s\n");
  out.push_back("version: !!int 1\n");
  out.push_back("version: 1\nbackend: !docker docker\n");
  out.push_back(std::string("version: 1\0backend: lxd\n", 25));
  out.push_back("\xef\xbb\xbfversion: 1\n");
  out.push_back("version: 1\nsecrets: ['$(id)']\n");
  out.push_back("version: 1\nvm:\n  memory: -1GB\n");
  out.push_back("version: 1\n" + std::string(5000, '[') + "\n");
  out.push_back("version: 1\nagent:\n  command: " + std::string(40000, 'x') + "\n");
  return out;
}

class ConfigFuzz : public ::testing::Test {
 protected:
  // The file loads, or is refused with 78 naming the file and a position.
  std::optional<Config> Load(const std::string& text) {
    try {
      return Config::Parse(text, path);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitConfig) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
      return std::nullopt;
    }
  }

  // Sets updates.check in a file holding `text`: refused with the file untouched, or exactly
  // that key changed.
  void Edit(const std::string& text) {
    AtomicWrite(path, text, 0644);
    std::optional<Config> before = Load(text);
    try {
      SetConfigValue(path, "updates.check", "false");
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == kExitConfig || e.code() == kExitDataErr) << e.code() << e.what();
      EXPECT_EQ(ReadFile(path), text);
      return;
    }
    std::optional<Config> after = Load(ReadFile(path));
    ASSERT_TRUE(after.has_value()) << "an edit left an invalid file:\n" << ReadFile(path);
    EXPECT_FALSE(after->Bool("updates.check"));
    if (!before) return;  // the edit repaired the key that was wrong
    auto want = before->Entries(false);
    auto got = after->Entries(false);
    std::map<std::string, Json> a(want.begin(), want.end()), b(got.begin(), got.end());
    a["updates.check"] = false;
    EXPECT_EQ(a, b) << "before:\n" << text << "\nafter:\n" << ReadFile(path);
  }

  TempDir tmp;
  std::string path = tmp.path() + "/config.yaml";
};

TEST_F(ConfigFuzz, TheCorpusHasEveryKindOfDamage) {
  auto corpus = Corpus();
  ASSERT_GE(corpus.size(), 200u);
  int refused = 0;
  for (const auto& text : corpus) {
    if (!Load(text)) ++refused;
    Edit(text);
  }
  EXPECT_GE(refused, 150);
}

TEST_F(ConfigFuzz, TheFilesYamlCppLetsThroughAreRefused) {
  for (const char* text :
       {"version: 1\n---\nversion: 1\n", "version: 1\nbackend: !x docker\n",
        "version: 1\nagent:\n  command: \"claude\nupdates:\n  check: false\n",
        "version: 1\nbackend: docker\nbackend: lxd\n", "version: 1\nsecrets: [A B]\n"}) {
    EXPECT_FALSE(Load(text).has_value()) << text;
  }
}

TEST_F(ConfigFuzz, RandomMutations) {
  std::mt19937 rng(42);
  std::string good = kGood;
  const std::string alphabet = "\"':-[]{}#&*!|>\t\n ,?%@`\\ax09";
  for (int round = 0; round < 1500; ++round) {
    std::string text = good;
    for (int i = 1 + static_cast<int>(rng() % 4); i > 0; --i) {
      size_t at = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (at < text.size()) text.erase(at, 1 + rng() % 5);
          break;
        default:
          if (at < text.size()) text[at] = alphabet[rng() % alphabet.size()];
          break;
      }
    }
    Load(text);
    if (round % 5 == 0) Edit(text);
  }
}

}  // namespace
}  // namespace ss
