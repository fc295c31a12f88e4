// JsonWriter (private): a small streaming JSON writer for the report and the Perfetto export,
// so output of any size is written without building a document tree. Keys and strings are
// escaped per RFC 8259; doubles that are not finite are written as null.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace objprof::analysis::internal {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, bool pretty = true) : out_(out), pretty_(pretty) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(double d);
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint32_t v) { return value(static_cast<std::uint64_t>(v)); }
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& null();

  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  template <class T>
  JsonWriter& array(std::string_view k, const std::vector<T>& v) {
    key(k);
    begin_array();
    for (const T& x : v) value(x);
    return end_array();
  }

  static void escape(std::string& out, std::string_view s);

 private:
  void before_value(bool compound = false);
  void newline();
  std::string& out_;
  bool pretty_;
  struct Level {
    bool array;
    bool first;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace objprof::analysis::internal
