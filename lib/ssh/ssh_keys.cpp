#include "ssh_keys.hpp"

#include <libssh/libssh.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "error.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "strings.hpp"

namespace ss {
namespace {

struct KeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
using KeyPtr = std::unique_ptr<ssh_key_struct, KeyFree>;

struct CharFree {
  void operator()(char* p) const { ssh_string_free_char(p); }
};
using CharPtr = std::unique_ptr<char, CharFree>;

std::string PublicLine(ssh_key key, std::string_view comment) {
  char* b64 = nullptr;
  if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK) {
    throw Error(kExitSoftware, "cannot export a public key");
  }
  CharPtr holder(b64);
  std::string line = Cat(ssh_key_type_to_char(ssh_key_type(key)), " ", b64);
  if (!comment.empty()) line += Cat(" ", comment);
  return line;
}

// Splits "type base64 [comment]" into its first two fields and imports the key.
KeyPtr ImportPublicLine(std::string_view line, std::string* type_out = nullptr,
                        std::string* b64_out = nullptr) {
  std::vector<std::string> fields;
  for (auto& f : Split(Trim(line), ' ')) {
    if (!f.empty()) fields.push_back(f);
  }
  if (fields.size() < 2) {
    throw Error(kExitDataErr, Cat("not a public key: '", std::string(Trim(line)), "'"));
  }
  enum ssh_keytypes_e type = ssh_key_type_from_name(fields[0].c_str());
  ssh_key key = nullptr;
  if (type == SSH_KEYTYPE_UNKNOWN ||
      ssh_pki_import_pubkey_base64(fields[1].c_str(), type, &key) != SSH_OK) {
    throw Error(kExitDataErr, Cat("not a valid ", fields[0], " public key"));
  }
  if (type_out) *type_out = fields[0];
  if (b64_out) *b64_out = fields[1];
  return KeyPtr(key);
}

std::string Base64Decode(std::string_view in) {
  std::string out((in.size() / 4 + 1) * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n < 0) return {};
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes.
  if (!in.empty() && in.back() == '=') --len;
  if (in.size() > 1 && in[in.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

// Whether one host pattern of a known_hosts line names `name` exactly (plain or hashed "|1|").
bool HostFieldMatches(std::string_view field, std::string_view name) {
  if (field.substr(0, 3) != "|1|") return field == name;
  auto parts = Split(field.substr(3), '|');
  if (parts.size() != 2) return false;
  std::string salt = Base64Decode(parts[0]);
  std::string want = Base64Decode(parts[1]);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (!HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
            reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac, &mac_len)) {
    return false;
  }
  return want.size() == mac_len && std::memcmp(want.data(), mac, mac_len) == 0;
}

struct ParsedLine {
  bool entry = false;  // a host entry (not blank, not a comment, not a @marker line)
  std::vector<std::string> hosts;
  std::string rest;  // "type base64 [comment]"
};

ParsedLine ParseLine(const std::string& line) {
  ParsedLine p;
  std::string_view t = Trim(line);
  if (t.empty() || t[0] == '#' || t[0] == '@') return p;
  size_t sp = t.find_first_of(" \t");
  if (sp == std::string_view::npos) return p;
  p.entry = true;
  p.hosts = Split(t.substr(0, sp), ',');
  p.rest = std::string(Trim(t.substr(sp)));
  return p;
}

// Rewrites the file without `name`; appends `add` (a full line) when given.
bool RewriteKnownHosts(const std::string& file, const std::string& name, const std::string& add) {
  MakeDirs(Dirname(file), 0700);
  FileLock lock(file + ".lock");
  std::string old = ReadFileIfExists(file).value_or("");
  std::string out;
  bool removed = false;
  for (const auto& line : SplitLines(old)) {
    ParsedLine p = ParseLine(line);
    if (!p.entry) {
      out += line + "\n";
      continue;
    }
    std::vector<std::string> keep;
    for (const auto& h : p.hosts) {
      if (HostFieldMatches(h, name)) {
        removed = true;
      } else {
        keep.push_back(h);
      }
    }
    if (keep.size() == p.hosts.size()) {
      out += line + "\n";
    } else if (!keep.empty()) {
      out += Cat(Join(keep, ","), " ", p.rest, "\n");
    }
  }
  if (!add.empty()) out += add + "\n";
  if (out != old) AtomicWrite(file, out, 0644);
  return removed;
}

void RequirePrivate(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(kExitIoErr, Cat("cannot read '", path, "': ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0 || st.st_uid != ::getuid()) {
    throw Error(kExitNoPerm, Cat("unsafe permissions on the private key '", path, "'"),
                {"it must be owned by you and readable only by you (mode 0600)"},
                {Cat("chmod 600 ", path)});
  }
}

}  // namespace

KeyPair GenerateEd25519Key(std::string_view comment) {
  ssh_key raw = nullptr;
  if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &raw) != SSH_OK) {
    throw Error(kExitSoftware, "cannot generate an ed25519 key");
  }
  KeyPtr key(raw);
  char* b64 = nullptr;
  if (ssh_pki_export_privkey_base64(key.get(), nullptr, nullptr, nullptr, &b64) != SSH_OK) {
    throw Error(kExitSoftware, "cannot export an ed25519 private key");
  }
  CharPtr holder(b64);
  KeyPair pair;
  pair.private_key = b64;
  if (pair.private_key.empty() || pair.private_key.back() != '\n') pair.private_key += '\n';
  pair.public_key = PublicLine(key.get(), comment);
  return pair;
}

void WriteKeyPair(const std::string& path, const KeyPair& pair) {
  AtomicWrite(path, pair.private_key, 0600);
  AtomicWrite(path + ".pub", pair.public_key + "\n", 0644);
}

std::string ReadPublicKey(const std::string& path) {
  std::string text = ReadFile(path);
  if (text.find("PRIVATE KEY") == std::string::npos) {
    std::string line = SplitLines(text).empty() ? "" : SplitLines(text)[0];
    ImportPublicLine(line);  // validates
    return std::string(Trim(line));
  }
  ssh_key raw = nullptr;
  if (ssh_pki_import_privkey_base64(text.c_str(), nullptr, nullptr, nullptr, &raw) != SSH_OK) {
    throw Error(kExitDataErr, Cat("cannot read the private key '", path, "'"));
  }
  KeyPtr key(raw);
  return PublicLine(key.get(), {});
}

std::string KeyFingerprint(std::string_view public_key_line) {
  KeyPtr key = ImportPublicLine(public_key_line);
  unsigned char* hash = nullptr;
  size_t hlen = 0;
  if (ssh_get_publickey_hash(key.get(), SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) != SSH_OK) {
    throw Error(kExitSoftware, "cannot hash a public key");
  }
  char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
  ssh_clean_pubkey_hash(&hash);
  if (fp == nullptr) throw Error(kExitSoftware, "cannot format a key fingerprint");
  std::string out = fp;
  ssh_string_free_char(fp);
  return out;
}

std::string EnsureClientKey() {
  std::string dir = StateDir();
  MakeDirs(dir, 0700);
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid == ::getuid() && (st.st_mode & 077) != 0) {
    ::chmod(dir.c_str(), 0700);
  }
  std::string path = dir + "/id_ed25519";
  FileLock lock(path + ".lock");
  if (PathExists(path)) {
    RequirePrivate(path);
    if (!PathExists(path + ".pub")) {
      AtomicWrite(path + ".pub", ReadPublicKey(path) + "\n", 0644);
    }
    return path;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  WriteKeyPair(path, GenerateEd25519Key(Cat("ss@", host[0] ? host : "localhost")));
  return path;
}

std::string KnownHostsName(std::string_view host, int port) {
  if (port == 22) return std::string(host);
  return Cat("[", host, "]:", port);
}

void PinHostKey(const std::string& known_hosts_file, std::string_view host, int port,
                std::string_view public_key_line) {
  std::string type, b64;
  ImportPublicLine(public_key_line, &type, &b64);
  std::string name = KnownHostsName(host, port);
  RewriteKnownHosts(known_hosts_file, name, Cat(name, " ", type, " ", b64));
}

bool UnpinHostKey(const std::string& known_hosts_file, std::string_view host, int port) {
  if (!PathExists(known_hosts_file)) return false;
  return RewriteKnownHosts(known_hosts_file, KnownHostsName(host, port), {});
}

std::vector<std::string> PinnedHostKeys(const std::string& known_hosts_file, std::string_view host,
                                        int port) {
  std::vector<std::string> keys;
  std::string name = KnownHostsName(host, port);
  for (const auto& line : SplitLines(ReadFileIfExists(known_hosts_file).value_or(""))) {
    ParsedLine p = ParseLine(line);
    if (!p.entry) continue;
    for (const auto& h : p.hosts) {
      if (!HostFieldMatches(h, name)) continue;
      auto fields = Split(p.rest, ' ');
      if (fields.size() >= 2) keys.push_back(Cat(fields[0], " ", fields[1]));
      break;
    }
  }
  return keys;
}

KeyPair CreateSandboxHostKey(const std::string& key_path, const std::string& known_hosts_file,
                             std::string_view host, int port) {
  KeyPair pair = GenerateEd25519Key(Cat("ss-sandbox-host-key ", KnownHostsName(host, port)));
  MakeDirs(Dirname(key_path), 0700);
  WriteKeyPair(key_path, pair);
  PinHostKey(known_hosts_file, host, port, pair.public_key);
  return pair;
}

}  // namespace ss
