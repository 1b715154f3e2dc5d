#include "tools/cli/json.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace codecvisor::cli {
namespace {

TEST(JsonQuoteTest, PlainTextIsQuoted) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("h264"), "\"h264\"");
  EXPECT_EQ(JsonQuote("/videos/a b.mp4"), "\"/videos/a b.mp4\"");
}

TEST(JsonQuoteTest, QuotesAndBackslashesAreEscaped) {
  EXPECT_EQ(JsonQuote("say \"hi\""), R"("say \"hi\"")");
  EXPECT_EQ(JsonQuote(R"(C:\videos\)"), R"("C:\\videos\\")");
  EXPECT_EQ(JsonQuote("/"), "\"/\"") << "solidus needs no escape";
}

TEST(JsonQuoteTest, ControlCharactersAreEscaped) {
  EXPECT_EQ(JsonQuote("a\nb\tc\rd\be\ff"), R"("a\nb\tc\rd\be\ff")");
  EXPECT_EQ(JsonQuote(std::string("\0", 1)), R"("\u0000")");
  EXPECT_EQ(JsonQuote("\x01\x1f"), R"("\u0001\u001f")");
  EXPECT_EQ(JsonQuote("\x7f"), "\"\x7f\"") << "DEL is not a JSON control character";
}

TEST(JsonQuoteTest, ValidUtf8PassesThrough) {
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");                // é
  EXPECT_EQ(JsonQuote("\xe2\x82\xac"), "\"\xe2\x82\xac\"");              // €
  EXPECT_EQ(JsonQuote("\xf0\x9f\x8e\xac"), "\"\xf0\x9f\x8e\xac\"");      // 🎬
  EXPECT_EQ(JsonQuote("\xef\xbf\xbf"), "\"\xef\xbf\xbf\"");              // U+FFFF
  EXPECT_EQ(JsonQuote("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");      // U+10FFFF
}

TEST(JsonQuoteTest, InvalidUtf8BecomesReplacementCharacters) {
  const std::string kFffd = "\xef\xbf\xbd";
  EXPECT_EQ(JsonQuote("a\xff" "b"), "\"a" + kFffd + "b\"");
  EXPECT_EQ(JsonQuote("\xc3"), "\"" + kFffd + "\"") << "truncated sequence";
  EXPECT_EQ(JsonQuote("\xc3(") , "\"" + kFffd + "(\"") << "bad continuation";
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"" + kFffd + kFffd + "\"") << "overlong '/'";
  EXPECT_EQ(JsonQuote("\xe0\x80\xaf"), "\"" + kFffd + kFffd + kFffd + "\"") << "overlong, 3 bytes";
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"" + kFffd + kFffd + kFffd + "\"") << "UTF-16 surrogate";
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"" + kFffd + kFffd + kFffd + kFffd + "\"") << "above U+10FFFF";
  EXPECT_EQ(JsonQuote("\x80"), "\"" + kFffd + "\"") << "lone continuation byte";
}

TEST(JsonNumberTest, ShortestRoundTripAndNullForNonFinite) {
  EXPECT_EQ(JsonNumber(25), "25");
  EXPECT_EQ(JsonNumber(0.1), "0.1");
  EXPECT_EQ(JsonNumber(-2.5), "-2.5");
  EXPECT_EQ(std::stod(JsonNumber(30000.0 / 1001)), 30000.0 / 1001);
  EXPECT_EQ(JsonNumber(std::nan("")), "null");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(JsonNumber(-std::numeric_limits<double>::infinity()), "null");
}

TEST(JsonWriterTest, NestedDocument) {
  JsonWriter w;
  w.BeginObject();
  w.Key("name").String("cpu");
  w.Key("devices").BeginArray().String("cpu").String("cpu:1").EndArray();
  w.Key("pid").Null();
  w.Key("ok").Bool(true);
  w.Key("frames").Int(-1);
  w.Key("fps").Double(29.97);
  w.Key("empty").BeginObject().EndObject();
  w.Key("none").BeginArray().EndArray();
  w.Key("list").BeginArray().BeginObject().Key("a").Int(1).EndObject().BeginObject().EndObject().EndArray();
  w.EndObject();
  EXPECT_EQ(w.str(),
            R"({"name":"cpu","devices":["cpu","cpu:1"],"pid":null,"ok":true,"frames":-1,"fps":29.97,)"
            R"("empty":{},"none":[],"list":[{"a":1},{}]})");
}

TEST(JsonWriterTest, KeysAreEscapedToo) {
  JsonWriter w;
  w.BeginObject().Key("a\"b").Int(1).EndObject();
  EXPECT_EQ(w.str(), R"({"a\"b":1})");
}

}  // namespace
}  // namespace codecvisor::cli
