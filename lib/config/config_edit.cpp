#include "config_edit.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "size.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string LeadingComments(const std::string& text) {
  std::string out;
  for (const auto& line : SplitLines(text)) {
    std::string_view t = Trim(line);
    if (!t.empty() && t[0] != '#') break;
    out += line + "\n";
  }
  return out;
}

const char* kNewFileHeader =
    "# ss configuration. Every key, its range and its default: man 5 ss-config\n";

// ---- text edits that keep the user's file ----

struct Line {
  size_t begin, end;  // [begin, end) without the newline
};

std::vector<Line> LinesOf(const std::string& text) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      if (start < text.size()) lines.push_back({start, text.size()});
      break;
    }
    lines.push_back({start, nl});
    start = nl + 1;
  }
  return lines;
}

size_t Indent(const std::string& text, const Line& l) {
  size_t i = l.begin;
  while (i < l.end && text[i] == ' ') ++i;
  return i - l.begin;
}

bool IsBlankOrComment(const std::string& text, const Line& l) {
  std::string_view t = Trim(std::string_view(text).substr(l.begin, l.end - l.begin));
  return t.empty() || t[0] == '#';
}

size_t LineIndexAt(const std::vector<Line>& lines, size_t pos) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (pos >= lines[i].begin && pos <= lines[i].end) return i;
  }
  return lines.empty() ? 0 : lines.size() - 1;
}

// End of a block value that starts on the line of a key with the given indent: the end of the
// last following line that is indented deeper (or is a "- " item at the same indent).
size_t BlockValueEnd(const std::string& text, const std::vector<Line>& lines, size_t key_line,
                     size_t key_indent) {
  size_t end = lines[key_line].end;
  for (size_t i = key_line + 1; i < lines.size(); ++i) {
    if (IsBlankOrComment(text, lines[i])) continue;
    size_t ind = Indent(text, lines[i]);
    bool item = text.compare(lines[i].begin + ind, 2, "- ") == 0 ||
                text.compare(lines[i].begin + ind, 1, "-") == 0;
    if (ind > key_indent || (ind == key_indent && item)) {
      end = lines[i].end;
      continue;
    }
    break;
  }
  return end;
}

// End of a plain or quoted scalar starting at pos.
size_t ScalarEnd(const std::string& text, size_t pos, bool flow) {
  if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'')) {
    char q = text[pos];
    size_t i = pos + 1;
    while (i < text.size()) {
      if (q == '\'' && text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        i += 2;
        continue;
      }
      if (q == '"' && text[i] == '\\') {
        i += 2;
        continue;
      }
      if (text[i] == q) return i + 1;
      ++i;
    }
    return text.size();
  }
  size_t i = pos;
  while (i < text.size() && text[i] != '\n') {
    if (text[i] == '#' && i > pos && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
    if (flow && (text[i] == ',' || text[i] == '}' || text[i] == ']')) break;
    ++i;
  }
  while (i > pos && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
  return i;
}

std::string YamlScalar(const Json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    bool looks_special =
        ParseBool(s) || ParseInt(s) || s == "null" || s == "~" || (!s.empty() && s.back() == ' ');
    if (NameOf(s, "A-Za-z0-9_./@+-", "A-Za-z0-9_./@+ -", s.size()) && !looks_special) return s;
    return Json(s).dump();  // a JSON string is a valid YAML double-quoted scalar
  }
  return v.dump();
}

std::string YamlInline(const KeySpec& spec, const Json& v) {
  if (spec.type == ValueType::kSize) return FormatSizeConfig(v.get<int64_t>());
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : v) items.push_back(YamlScalar(item));
    return Cat("[", Join(items, ", "), "]");
  }
  return YamlScalar(v);
}

// Returns the edited text, or nullopt when the file's shape needs a full rewrite.
std::optional<std::string> EditText(const std::string& text, const std::vector<std::string>& parts,
                                    const std::string& inline_value) {
  YAML::Node root = YAML::Load(text);
  std::vector<Line> lines = LinesOf(text);
  if (root.IsNull() ||
      (root.IsMap() && root.size() == 0 && Trim(text).find('{') == std::string::npos)) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    std::string indent;
    for (size_t i = 0; i < parts.size(); ++i) {
      out += Cat(indent, parts[i], ":", i + 1 == parts.size() ? " " + inline_value : "", "\n");
      indent += "  ";
    }
    return out;
  }
  if (!root.IsMap() || root.Style() == YAML::EmitterStyle::Flow) return std::nullopt;

  YAML::Node node = root;
  YAML::Node key_node;
  size_t depth = 0;
  for (; depth < parts.size(); ++depth) {
    if (!node.IsMap()) break;
    YAML::Node found_key, found_value;
    bool found = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == parts[depth]) {
        found_key = it->first;
        found_value = it->second;
        found = true;
      }
    }
    if (!found) break;
    key_node = found_key;
    node = found_value;
  }

  auto key_line_of = [&](const YAML::Node& k) {
    return LineIndexAt(lines, static_cast<size_t>(k.Mark().pos));
  };
  auto after_colon = [&](const YAML::Node& k) -> std::optional<size_t> {
    size_t pos = static_cast<size_t>(k.Mark().pos);
    size_t colon = text.find(':', pos + k.Scalar().size());
    if (colon == std::string::npos) return std::nullopt;
    return colon + 1;
  };

  if (depth == parts.size()) {
    // The key exists: replace its value.
    size_t kline = key_line_of(key_node);
    size_t kindent = static_cast<size_t>(key_node.Mark().column);
    auto start = after_colon(key_node);
    if (!start) return std::nullopt;
    if (node.IsScalar() && node.Mark().pos >= 0) {
      size_t pos = static_cast<size_t>(node.Mark().pos);
      if (text.compare(pos, 1, "|") == 0 || text.compare(pos, 1, ">") == 0) return std::nullopt;
      bool flow = LineIndexAt(lines, pos) == kline && text.find('{', lines[kline].begin) < pos;
      size_t end = ScalarEnd(text, pos, flow);
      return text.substr(0, pos) + inline_value + text.substr(end);
    }
    if (node.IsSequence() && node.Style() == YAML::EmitterStyle::Flow) {
      size_t open = text.find('[', *start);
      if (open == std::string::npos) return std::nullopt;
      int level = 0;
      for (size_t i = open; i < text.size(); ++i) {
        if (text[i] == '[') ++level;
        if (text[i] == ']' && --level == 0) {
          return text.substr(0, open) + inline_value + text.substr(i + 1);
        }
      }
      return std::nullopt;
    }
    if (node.IsNull() || node.IsSequence()) {
      size_t end = node.IsNull() ? ScalarEnd(text, *start, false)
                                 : BlockValueEnd(text, lines, kline, kindent);
      return text.substr(0, *start) + " " + inline_value + text.substr(end);
    }
    return std::nullopt;
  }

  // Missing key: add it (and any missing sections) as the last child of the deepest section.
  std::vector<std::string> rest(parts.begin() + static_cast<long>(depth), parts.end());
  auto render = [&](size_t base) {
    std::string out;
    for (size_t i = 0; i < rest.size(); ++i) {
      out += Cat(std::string(base + 2 * i, ' '), rest[i], ":",
                 i + 1 == rest.size() ? " " + inline_value : "", "\n");
    }
    return out;
  };
  if (depth == 0) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + render(0);
  }
  size_t kline = key_line_of(key_node);
  size_t kindent = static_cast<size_t>(key_node.Mark().column);
  if (node.IsNull()) {
    auto start = after_colon(key_node);
    if (!start) return std::nullopt;
    size_t end = ScalarEnd(text, *start, false);
    std::string tail = text.substr(end);
    std::string rendered = render(kindent + 2);
    rendered.pop_back();  // the line's own newline follows
    return text.substr(0, *start) + "\n" + rendered + tail;
  }
  if (node.IsMap() && node.Style() == YAML::EmitterStyle::Flow) {
    // "section: {a: 1}" becomes "section: {a: 1, key: value}".
    auto start = after_colon(key_node);
    size_t open = start ? text.find('{', *start) : std::string::npos;
    if (open == std::string::npos) return std::nullopt;
    int level = 0;
    for (size_t i = open; i < text.size(); ++i) {
      if (text[i] == '{') ++level;
      if (text[i] == '}' && --level == 0) {
        std::string flow;
        for (size_t j = 0; j < rest.size(); ++j) {
          flow += Cat(rest[j], ": ", j + 1 == rest.size() ? inline_value : "{");
        }
        flow += std::string(rest.size() - 1, '}');
        bool empty = Trim(std::string_view(text).substr(open + 1, i - open - 1)).empty();
        return text.substr(0, i) + (empty ? "" : ", ") + flow + text.substr(i);
      }
    }
    return std::nullopt;
  }
  if (!node.IsMap()) return std::nullopt;
  size_t child_indent = kindent + 2;
  for (auto it = node.begin(); it != node.end(); ++it) {
    child_indent = static_cast<size_t>(it->first.Mark().column);
    break;
  }
  size_t end = BlockValueEnd(text, lines, kline, kindent);
  std::string insert = render(child_indent);
  if (end >= text.size()) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + insert;
  }
  return text.substr(0, end + 1) + insert + text.substr(end + 1);
}

// The text without the key at `parts` and its value (block style only): nullopt when the file's
// shape is not one this edit handles, the text itself when the key is not there.
std::optional<std::string> RemoveText(const std::string& text,
                                      const std::vector<std::string>& parts) {
  YAML::Node root = YAML::Load(text);
  if (!root.IsMap()) return root.IsNull() ? std::optional<std::string>(text) : std::nullopt;
  // reset(), not '=': assigning a Node writes through to the node it refers to.
  YAML::Node node, key_node;
  node.reset(root);
  for (size_t depth = 0; depth < parts.size(); ++depth) {
    if (!node.IsMap()) return text;
    if (node.Style() == YAML::EmitterStyle::Flow) return std::nullopt;
    YAML::Node found_key, found_value;
    bool found = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == parts[depth]) {
        found_key.reset(it->first);
        found_value.reset(it->second);
        found = true;
      }
    }
    if (!found) return text;
    key_node.reset(found_key);
    node.reset(found_value);
  }
  std::vector<Line> lines = LinesOf(text);
  size_t kline = LineIndexAt(lines, static_cast<size_t>(key_node.Mark().pos));
  if (Indent(text, lines[kline]) != static_cast<size_t>(key_node.Mark().column)) {
    return std::nullopt;  // not the first thing on its line
  }
  size_t end = BlockValueEnd(text, lines, kline, static_cast<size_t>(key_node.Mark().column));
  if (end >= text.size()) return text.substr(0, lines[kline].begin);
  return text.substr(0, lines[kline].begin) + text.substr(end + 1);
}

// Full rewrite for shapes the text edit does not handle (flow-style sections, block scalars):
// the values survive, the leading comment block survives, other comments do not.
std::string Rewrite(const std::string& text, const std::vector<std::string>& parts,
                    const YAML::Node& value) {
  YAML::Node root = text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(text);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child.IsMap()) chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(chain.back()[parts[i]]);
  }
  chain.back()[parts.back()] = value;
  YAML::Emitter emitter;
  emitter.SetIndent(2);
  emitter << root;
  std::string header = LeadingComments(text);
  return header + emitter.c_str() + "\n";
}

YAML::Node ToYaml(const KeySpec& spec, const Json& v) {
  if (spec.type == ValueType::kSize) return YAML::Node(FormatSizeConfig(v.get<int64_t>()));
  if (v.is_array()) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& item : v) seq.push_back(item.get<std::string>());
    return seq;
  }
  if (v.is_boolean()) return YAML::Node(v.get<bool>());
  if (v.is_number_integer()) return YAML::Node(v.get<int64_t>());
  return YAML::Node(v.get<std::string>());
}

}  // namespace

std::pair<std::string, Json> SetConfigValue(const std::string& path, std::string_view key,
                                            std::string_view text) {
  std::string canonical;
  const KeySpec* spec = FindKeySpec(key, &canonical);
  if (!spec) throw UnknownKeyError(key);
  Json value = ParseValueText(*spec, canonical, text);
  std::vector<std::string> parts = Split(canonical, '.');

  // (SS_HOME made by its first command, this one: the user's alone.)
  if (Dirname(path) == SsHome()) {
    MakeOwnedDir(SsHome(), 0700);
  } else {
    MakeDirs(Dirname(path), 0755);
  }
  FileLock lock(Cat(Dirname(path), "/.", Basename(path), ".lock"), FileLock::kExclusive,
                std::chrono::seconds(10), Basename(path));
  std::optional<std::string> existing = ReadFileIfExists(path);
  std::string original = existing ? *existing : Cat(kNewFileHeader, "version: 1\n");
  // A file that is already invalid is only touched when this edit makes it valid (setting the
  // very key that is wrong); otherwise its own error is reported and it stays as it is.
  std::optional<Error> original_error;
  try {
    Config::Parse(original, path);
  } catch (const Error& e) {
    original_error = e;
  }

  std::optional<std::string> edited;
  try {
    edited = EditText(original, parts, YamlInline(*spec, value));
  } catch (const std::exception& e) {
    Debug(Cat("config: in-place edit failed (", e.what(), "); rewriting the file"));
  }
  if (edited) {
    try {
      if (Config::Parse(*edited, path).Get(canonical) != value) edited.reset();
    } catch (const Error&) {
      if (original_error) throw *original_error;
      edited.reset();
    }
  }
  if (!edited) {
    if (original_error) throw *original_error;
    edited = Rewrite(original, parts, ToYaml(*spec, value));
    if (Config::Parse(*edited, path).Get(canonical) != value) {
      throw Error(kExitSoftware, Cat("internal: could not write ", canonical, " to ", path));
    }
  }
  // Whatever way the text was edited, only this key may have changed.
  if (!original_error) {
    auto before = Config::Parse(original, path).Entries(false);
    auto after = Config::Parse(*edited, path).Entries(false);
    std::map<std::string, Json> want(before.begin(), before.end());
    want[canonical] = value;
    if (std::map<std::string, Json>(after.begin(), after.end()) != want) {
      throw Error(kExitSoftware,
                  Cat("internal: setting ", canonical, " would change other keys in ", path,
                      "; the file was left as it was"));
    }
  }
  AtomicWrite(path, *edited, 0644);
  return {canonical, value};
}

void UnsetConfigSection(const std::string& path, std::string_view key) {
  std::vector<std::string> parts = Split(std::string(key), '.');
  FileLock lock(Cat(Dirname(path), "/.", Basename(path), ".lock"), FileLock::kExclusive,
                std::chrono::seconds(10), Basename(path));
  std::optional<std::string> original = ReadFileIfExists(path);
  if (!original) return;
  auto before = Config::Parse(*original, path).Entries(false);  // an invalid file: its error
  std::map<std::string, Json> want;
  for (const auto& [k, v] : before) {
    if (k != key && k.rfind(Cat(key, "."), 0) != 0) want[k] = v;
  }
  if (want.size() == before.size()) return;
  std::optional<std::string> edited;
  try {
    edited = RemoveText(*original, parts);
  } catch (const std::exception& e) {
    Debug(Cat("config: in-place removal failed (", e.what(), "); rewriting the file"));
  }
  auto matches = [&](const std::string& text) {
    try {
      auto after = Config::Parse(text, path).Entries(false);
      return std::map<std::string, Json>(after.begin(), after.end()) == want;
    } catch (const Error&) {
      return false;
    }
  };
  if (!edited || !matches(*edited)) {
    YAML::Node root = YAML::Load(*original);
    YAML::Node parent;
    parent.reset(root);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = parent[parts[i]];
      parent.reset(child);
    }
    parent.remove(parts.back());
    YAML::Emitter emitter;
    emitter.SetIndent(2);
    emitter << root;
    edited = LeadingComments(*original) + emitter.c_str() + "\n";
    if (!matches(*edited)) {
      throw Error(kExitSoftware, Cat("internal: could not remove ", key, " from ", path,
                                     "; the file was left as it was"));
    }
  }
  AtomicWrite(path, *edited, 0644);
}

}  // namespace ss
