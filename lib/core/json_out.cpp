#include "json_out.hpp"

#include <iostream>

namespace ss {

Json JsonDocument(std::string_view kind, int version) {
  Json doc = Json::object();
  doc["kind"] = std::string(kind);
  doc["version"] = version;
  return doc;
}

std::string DumpJson(const Json& doc, int indent) {
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace);
}

void PrintJson(const Json& doc) { std::cout << DumpJson(doc, 2) << "\n" << std::flush; }

void PrintJsonLine(const Json& doc) { std::cout << DumpJson(doc) << "\n" << std::flush; }

}  // namespace ss
