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

}  // namespace

std::string Folder::Target() const { return Cat(kWorkspaceRoot, "/", name); }

Folder OpenFolder(const std::string& dir) {
  Folder f;
  f.path = ResolveHostFolder(dir, "folder", "ss run DIR", true);
  Json folders = ReadFolders();
  if (folders.contains(f.path) && folders[f.path].is_object()) {
    f.name = folders[f.path].value("name", "");
    f.sandbox = folders[f.path].value("sandbox", "");
    if (!f.name.empty() && !f.sandbox.empty()) return f;
  }
  f.name = FolderShareName(f.path);
  f.sandbox = Cat(f.name, "-", Sha256Hex(f.path).substr(0, 4));
  MakeDirs(StateDir(), 0700);
  FileLock lock(FoldersFile() + ".lock");
  folders = ReadFolders();
  folders[f.path] = {{"name", f.name}, {"sandbox", f.sandbox}};
  Json doc = JsonDocument("Folders");
  doc["folders"] = folders;
  AtomicWrite(FoldersFile(), DumpJson(doc, 2) + "\n", 0600);
  return f;
}

}  // namespace ss
