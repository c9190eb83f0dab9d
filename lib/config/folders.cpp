#include "folders.hpp"

#include "digest.hpp"
#include "fs.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "shares.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string FoldersFile() { return StateDir() + "/folders.json"; }

Json ReadFolders() {
  auto text = ReadFileIfExists(FoldersFile());
  if (!text) return Json::object();
  Json doc = Json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("folders") || !doc["folders"].is_object()) {
    Warn(Cat(FoldersFile(), " is damaged; folders are recorded afresh"));
    return Json::object();
  }
  return doc["folders"];
}

// The record of `path`, when it is a whole one.
std::optional<Folder> FromJson(const std::string& path, const Json& j) {
  if (!j.is_object()) return std::nullopt;
  Folder f;
  f.path = path;
  f.name = j.value("name", "");
  f.sandbox = j.value("sandbox", "");
  f.copy = j.value("mode", "shared") == "copy";
  if (f.name.empty() || f.sandbox.empty()) return std::nullopt;
  return f;
}

}  // namespace

std::string Folder::Target() const { return Cat(kWorkspaceRoot, "/", name); }

bool IsFolderWord(std::string_view word) {
  return word == "." || word == ".." || word.starts_with("./") || word.starts_with("../") ||
         word.starts_with("/");
}

Folder OpenFolder(const std::string& dir) {
  std::string path = ResolveHostFolder(dir, "folder", "ss run DIR", true);
  Json folders = ReadFolders();
  if (folders.contains(path)) {
    if (auto f = FromJson(path, folders[path])) return *f;
  }
  Folder f;
  f.path = path;
  f.name = FolderShareName(f.path);
  f.sandbox = Cat(f.name, "-", Sha256Hex(f.path).substr(0, 4));
  f.copy = HoldsRepository(f.path);
  f.first_use = true;
  RecordFolder(f);
  return f;
}

bool HoldsRepository(const std::string& dir) { return PathExists(dir + "/.git"); }

void RecordFolder(const Folder& f) {
  MakeDirs(StateDir(), 0700);
  FileLock lock(FoldersFile() + ".lock");
  Json folders = ReadFolders();
  folders[f.path] = {
      {"name", f.name}, {"sandbox", f.sandbox}, {"mode", f.copy ? "copy" : "shared"}};
  Json doc = JsonDocument("Folders");
  doc["folders"] = folders;
  AtomicWrite(FoldersFile(), DumpJson(doc, 2) + "\n", 0600);
}

std::vector<Folder> RecordedFolders() {
  std::vector<Folder> out;
  const Json folders = ReadFolders();
  for (const auto& [path, j] : folders.items()) {
    if (auto f = FromJson(path, j)) out.push_back(*f);
  }
  return out;
}

std::optional<Folder> FolderOfSandbox(const std::string& sandbox) {
  for (auto& f : RecordedFolders()) {
    if (f.sandbox == sandbox) return f;
  }
  return std::nullopt;
}

std::optional<Folder> FolderAt(const std::string& dir) {
  std::string real = RealPath(dir);
  if (real.empty()) return std::nullopt;
  std::optional<Folder> best;
  for (auto& f : RecordedFolders()) {
    bool within = real == f.path || real.rfind(f.path == "/" ? f.path : f.path + "/", 0) == 0;
    if (within && (!best || f.path.size() > best->path.size())) best = f;
  }
  return best;
}

}  // namespace ss
