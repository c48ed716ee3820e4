// A validator for the subset of JSON Schema (draft 2020-12) the trace schema uses: type,
// required, properties, additionalProperties, items, minItems, maxItems, enum, const, minimum,
// maximum, oneOf, anyOf and "$ref" to "#/$defs/NAME". Annotations ($schema, $id, title,
// description) are ignored; any other keyword is refused when the schema is loaded, so the
// schema cannot silently use something this validator does not check.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cancel.h"

namespace minfer::trace {

class SchemaValidator {
 public:
  // The root schema; its "$defs" resolve "$ref"s. Throws Error on unsupported keywords.
  explicit SchemaValidator(nlohmann::json schema);
  ~SchemaValidator();
  SchemaValidator(const SchemaValidator&) = delete;  // the compiled nodes point into the schema
  SchemaValidator& operator=(const SchemaValidator&) = delete;
  // Problems as "<JSON pointer>: <what>", at most max_errors of them; empty when valid.
  // Throws Cancelled (cancel.h) once `cancel` is set (null: never).
  std::vector<std::string> validate(const nlohmann::json& doc, size_t max_errors = 20,
                                    const CancelFlag* cancel = nullptr) const;

 private:
  struct Path;
  struct Node;  // one (sub)schema with its keywords looked up once (json_schema.cpp)
  static constexpr size_t kMaxSchemaDepth = 256;
  void check(const Node& s, const nlohmann::json& v, const Path* at, std::vector<std::string>& errs,
             size_t max_errors, size_t depth, const CancelFlag* cancel) const;
  static void check_keyword_value(const std::string& keyword, const nlohmann::json& value,
                                  const std::string& where);
  const nlohmann::json& resolve(const std::string& ref) const;
  void check_keywords(const nlohmann::json& s, const std::string& where) const;
  const Node* compile(const nlohmann::json& s);
  nlohmann::json root_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<const nlohmann::json*, const Node*> compiled_;  // by schema object
  const Node* root_node_ = nullptr;
};

}  // namespace minfer::trace
