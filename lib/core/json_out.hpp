// --json output: every document is an object with "kind" and "version" first, snake_case keys,
// RFC 3339 UTC times, bytes and seconds as integers. Schemas are documented in ss-json(7).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace ss {

using Json = nlohmann::ordered_json;

Json JsonDocument(std::string_view kind, int version = 1);
// One document, pretty-printed, on stdout. Invalid UTF-8 is replaced, never thrown on.
void PrintJson(const Json& doc);
// One compact line on stdout (NDJSON streams), flushed.
void PrintJsonLine(const Json& doc);
std::string DumpJson(const Json& doc, int indent = -1);

}  // namespace ss
