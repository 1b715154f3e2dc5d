// File: base/mountinfo.cc

#include "base/mountinfo.h"

#include "absl/strings/str_split.h"

namespace codecvisor {
namespace {

// A mountinfo field as it names a path: the kernel writes a space, tab,
// newline or backslash in one as \NNN (octal).
std::string Unescape(absl::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3' && field[i + 2] >= '0' &&
        field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

}  // namespace

std::vector<MountEntry> MountEntries(absl::string_view mountinfo) {
  // "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS"
  std::vector<MountEntry> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 >= f.size()) continue;
    MountEntry m{Unescape(f[3]), Unescape(f[4]), {}, std::string(f[dash + 1]), absl::StrSplit(f[dash + 3], ',')};
    if (dash > 5) m.mount_options = absl::StrSplit(f[5], ',');
    mounts.push_back(std::move(m));
  }
  return mounts;
}

}  // namespace codecvisor
