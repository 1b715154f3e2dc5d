#include "tools/cli/json.h"

#include <cassert>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace codecvisor::cli {
namespace {

// Length of the well-formed UTF-8 sequence starting at `s[i]`, or 0 if the
// bytes there are not one (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

std::string JsonQuote(absl::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER, one per bad byte
      ++i;
      continue;
    }
    out.append(text.data() + i, len);
    i += len;
  }
  out.push_back('"');
  return out;
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  // Shortest round-trip form; "1e+30" and "0.1" are both valid JSON numbers.
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  assert(ec == std::errc());
  return std::string(buf, end);
}

void JsonWriter::BeforeValue() {
  if (levels_.empty()) {
    assert(out_.empty() && "a JSON document holds one top-level value");
    return;
  }
  Level& level = levels_.back();
  if (level.object) {
    assert(level.key_pending && "a value inside an object needs a Key() first");
    level.key_pending = false;
    return;  // Key() wrote the separator
  }
  if (!level.empty) out_.push_back(',');
  level.empty = false;
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  levels_.push_back({.object = true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  assert(!levels_.empty() && levels_.back().object && !levels_.back().key_pending);
  levels_.pop_back();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  levels_.push_back({.object = false});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  assert(!levels_.empty() && !levels_.back().object);
  levels_.pop_back();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  assert(!levels_.empty() && levels_.back().object && !levels_.back().key_pending);
  Level& level = levels_.back();
  if (!level.empty) out_.push_back(',');
  level.empty = false;
  level.key_pending = true;
  out_ += JsonQuote(key);
  out_.push_back(':');
  return *this;
}

JsonWriter& JsonWriter::String(absl::string_view value) {
  BeforeValue();
  out_ += JsonQuote(value);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  out_ += JsonNumber(value);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

}  // namespace codecvisor::cli
