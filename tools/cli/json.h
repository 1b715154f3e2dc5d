// File: tools/cli/json.h
//
// A small JSON writer for the command line's `--json` output: enough for
// flat objects and arrays of them, and correct where it matters, in string
// escaping. Every string is emitted as valid UTF-8 JSON whatever its bytes
// (file names and backend diagnostics are arbitrary bytes): control
// characters are escaped, and a byte that is not part of a well-formed
// UTF-8 sequence becomes U+FFFD, so a program reading our output never
// sees a parse error. Non-finite doubles, which JSON cannot express, are
// written as null.
//
// Thread-safety: a JsonWriter is a plain value; one thread at a time.

#ifndef CODECVISOR_TOOLS_CLI_JSON_H_
#define CODECVISOR_TOOLS_CLI_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace codecvisor::cli {

// `text` as a JSON string literal, quotes included.
// The version of every `--json` document the CLI prints (info, decode,
// backends, doctor, conformance), written first as "schema_version". Raised
// when a field is removed or changes meaning; adding a field keeps it.
// tools/README.md documents each schema.
inline constexpr int kJsonSchemaVersion = 1;

std::string JsonQuote(absl::string_view text);

// `value` as a JSON number: the shortest text that reads back as the same
// double, or null when it is NaN or infinite.
std::string JsonNumber(double value);

// Builds one JSON document, compactly (no spaces or newlines), by a
// sequence of calls in document order:
//
//   JsonWriter w;
//   w.BeginObject().Key("width").Int(320).Key("codec").String("h264").EndObject();
//   w.str();  // {"width":320,"codec":"h264"}
//
// Separators are inserted automatically. Misuse (a value where a key is
// due, unbalanced End calls) is a programming error, caught by assert() in
// debug builds; the output is then not valid JSON.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // The key of the next member; must be inside an object.
  JsonWriter& Key(absl::string_view key);
  JsonWriter& String(absl::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // The document so far; complete once every Begin has its End.
  const std::string& str() const { return out_; }

 private:
  // Writes the separator a value needs at this point.
  void BeforeValue();

  struct Level {
    bool object = false;
    bool empty = true;
    bool key_pending = false;  // objects: a key was written, its value is due
  };
  std::string out_;
  std::vector<Level> levels_;
};

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_JSON_H_
