// File: core/loader_folders.cc

#include "core/loader_folders.h"

#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/read_path_policy.h"

namespace codecvisor {
namespace {

constexpr int kMaxIncludeDepth = 4;

void Parse(absl::string_view text, const std::function<std::vector<std::string>(const std::string&)>& included,
           int depth, std::vector<std::string>* out) {
  for (absl::string_view line : absl::StrSplit(text, absl::ByAnyChar("\n"))) {
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (absl::StartsWith(line, "include") && line.size() > 7 && absl::ascii_isspace(line[7])) {
      if (depth >= kMaxIncludeDepth) continue;
      for (const std::string& t : included(std::string(absl::StripAsciiWhitespace(line.substr(7))))) {
        Parse(t, included, depth + 1, out);
      }
      continue;
    }
    if (absl::StartsWith(line, "hwcap")) continue;
    // Folders may be separated by spaces, tabs, commas or colons.
    for (absl::string_view part : absl::StrSplit(line, absl::ByAnyChar(" \t,:"), absl::SkipEmpty())) {
      if (part.empty() || part[0] != '/') continue;
      std::string folder = std::filesystem::path(std::string(part)).lexically_normal().string();
      while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
      if (std::find(out->begin(), out->end(), folder) == out->end()) out->push_back(std::move(folder));
    }
  }
}

// At most 64 KiB: a loader configuration is a few lines.
std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::string text(64 << 10, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return text;
}

// Whether every folder from / down to `folder` (real) may be searched by
// any user.
bool EveryoneMaySearch(const std::string& folder) {
  std::string prefix;
  for (absl::string_view part : absl::StrSplit(folder, '/', absl::SkipEmpty())) {
    prefix += "/";
    prefix.append(part.data(), part.size());
    struct stat st {};
    if (stat(prefix.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
  }
  return true;
}

std::vector<std::string> IncludedTexts(const std::string& pattern) {
  std::vector<std::string> texts;
  // A relative pattern is relative to /etc, as ldconfig reads it.
  const std::string absolute = !pattern.empty() && pattern[0] == '/' ? pattern : "/etc/" + pattern;
  glob_t matches{};
  if (glob(absolute.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc && texts.size() < 64; ++i) texts.push_back(ReadText(matches.gl_pathv[i]));
  }
  globfree(&matches);
  return texts;
}

}  // namespace

std::vector<std::string> ParseLoaderConfig(
    absl::string_view text, const std::function<std::vector<std::string>(const std::string& pattern)>& included) {
  std::vector<std::string> out;
  Parse(text, included, 0, &out);
  return out;
}

const std::vector<std::string>& LoaderFolders() {
  static const std::vector<std::string> folders = [] {
    std::vector<std::string> kept;
    for (const std::string& f : ParseLoaderConfig(ReadText("/etc/ld.so.conf"), IncludedTexts)) {
      bool system = false;
      for (const char* s : {"/usr", "/lib", "/lib64", "/lib32"}) system = system || Inside(f, s);
      char resolved[PATH_MAX];
      if (system || realpath(f.c_str(), resolved) == nullptr) continue;
      const std::string real = resolved;
      struct stat st {};
      if (stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      // Never what a manifest could not grant (the users' folders, /tmp,
      // /dev, /proc); and only where a root host's backend, nobody outside
      // its namespace, can reach it: a folder it cannot open would stop
      // every backend's start.
      if (!WhyReadPathIsRefused(real, "/", std::string()).empty() || !EveryoneMaySearch(real)) continue;
      if (kept.size() < kMaxLoaderFolders) kept.push_back(real);
    }
    return kept;
  }();
  return folders;
}

}  // namespace codecvisor
