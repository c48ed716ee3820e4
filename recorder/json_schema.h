// A validator for the subset of JSON Schema (draft 2020-12) the trace schema uses: type,
// required, properties, additionalProperties, items, minItems, maxItems, enum, const, minimum,
// maximum, oneOf, anyOf and "$ref" to "#/$defs/NAME". Annotations ($schema, $id, title,
// description) are ignored; any other keyword is refused when the schema is loaded, so the
// schema cannot silently use something this validator does not check.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cancel.h"

namespace minfer::trace {

class SchemaValidator {
 public:
  // The root schema; its "$defs" resolve "$ref"s. Throws Error on unsupported keywords.
  explicit SchemaValidator(nlohmann::json schema);
  // Problems as "<JSON pointer>: <what>", at most max_errors of them; empty when valid.
  // Throws Cancelled (cancel.h) once `cancel` is set (null: never).
  std::vector<std::string> validate(const nlohmann::json& doc, size_t max_errors = 20,
                                    const CancelFlag* cancel = nullptr) const;

 private:
  struct Path;
  static constexpr size_t kMaxSchemaDepth = 256;
  void check(const nlohmann::json& s, const nlohmann::json& v, const Path* at, std::vector<std::string>& errs,
             size_t max_errors, size_t depth, const CancelFlag* cancel) const;
  static void check_keyword_value(const std::string& keyword, const nlohmann::json& value,
                                  const std::string& where);
  const nlohmann::json& resolve(const std::string& ref) const;
  void check_keywords(const nlohmann::json& s, const std::string& where) const;
  nlohmann::json root_;
};

}  // namespace minfer::trace
