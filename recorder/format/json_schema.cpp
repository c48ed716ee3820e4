#include "format/json_schema.h"

#include <cmath>
#include <map>
#include <set>

#include "core/error.h"

namespace minfer::trace {

using nlohmann::json;

// The location being checked, as a chain of parents; turned into a JSON pointer only when an
// error is reported (most values are valid, and building strings for each would be slow).
struct SchemaValidator::Path {
  const Path* parent;
  const std::string* key;  // object member, or null for an array index
  size_t index;

  std::string str() const {
    std::string up = parent ? parent->str() : "";
    if (!key) return up + "/" + std::to_string(index);
    std::string k;
    for (char c : *key) k += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return up + "/" + k;
  }
};

namespace {

const char* type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "?";
  }
}

enum class Kind { Number, Integer, Object, Array, String, Boolean, Null, Unknown };

Kind kind_of(const std::string& t) {
  if (t == "number") return Kind::Number;
  if (t == "integer") return Kind::Integer;
  if (t == "object") return Kind::Object;
  if (t == "array") return Kind::Array;
  if (t == "string") return Kind::String;
  if (t == "boolean") return Kind::Boolean;
  if (t == "null") return Kind::Null;
  return Kind::Unknown;
}

bool has_type(const json& v, Kind t) {
  switch (t) {
    case Kind::Number: return v.is_number();
    case Kind::Integer: {
      // An integral float counts only where a double holds integers exactly (|x| <= 2^53):
      // readers convert integers with get<int64_t>(), which 1e300 would overflow.
      if (v.is_number_integer()) return true;
      if (!v.is_number_float()) return false;
      const double x = v.get<double>();
      return std::isfinite(x) && std::floor(x) == x && std::fabs(x) <= 9007199254740992.0;
    }
    case Kind::Object: return v.is_object();
    case Kind::Array: return v.is_array();
    case Kind::String: return v.is_string();
    case Kind::Boolean: return v.is_boolean();
    case Kind::Null: return v.is_null();
    default: return false;
  }
}

std::string short_dump(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

// A schema object with its keywords looked up once, when the validator is made: check() used
// to look each keyword up by name for every value it checked (a dozen string-keyed lookups per
// value, three quarters of the time a trace took to validate). Pointers into root_.
struct SchemaValidator::Node {
  bool boolean = false, allows = true;  // true / false as a schema
  const Node* ref = nullptr;
  bool has_type = false;
  std::vector<Kind> types;
  std::string type_names;  // "number or null"
  const json* constant = nullptr;
  const json* enumeration = nullptr;
  const json *minimum = nullptr, *maximum = nullptr;
  double minimum_value = 0, maximum_value = 0;
  std::vector<std::string> required;
  bool has_properties = false;
  std::map<std::string, const Node*, std::less<>> properties;
  const Node* additional = nullptr;  // additionalProperties (false: `additional_false`)
  bool additional_false = false;
  const json *min_items = nullptr, *max_items = nullptr;
  size_t min_items_value = 0, max_items_value = 0;
  const Node* items = nullptr;
  bool has_one_of = false, has_any_of = false;
  std::vector<const Node*> one_of, any_of;
};

SchemaValidator::SchemaValidator(json schema) : root_(std::move(schema)) {
  if (!root_.is_object()) fail("schema: the root is not an object");
  check_keywords(root_, "");
  root_node_ = compile(root_);
}

SchemaValidator::~SchemaValidator() = default;

// After check_keywords: every keyword's value has the type read here.
const SchemaValidator::Node* SchemaValidator::compile(const json& s) {
  if (auto it = compiled_.find(&s); it != compiled_.end()) return it->second;
  nodes_.push_back(std::make_unique<Node>());
  Node& n = *nodes_.back();
  compiled_[&s] = &n;  // before the parts: a $ref may lead back here
  if (s.is_boolean()) {
    n.boolean = true;
    n.allows = s.get<bool>();
    return &n;
  }
  if (auto r = s.find("$ref"); r != s.end()) n.ref = compile(resolve(r->get<std::string>()));
  if (auto t = s.find("type"); t != s.end()) {
    n.has_type = true;
    for (const auto& one : t->is_array() ? *t : json::array({*t})) {
      n.types.push_back(kind_of(one.get<std::string>()));
      n.type_names += (n.type_names.empty() ? "" : " or ") + one.get<std::string>();
    }
  }
  if (auto c = s.find("const"); c != s.end()) n.constant = &*c;
  if (auto e = s.find("enum"); e != s.end()) n.enumeration = &*e;
  if (auto m = s.find("minimum"); m != s.end()) n.minimum = &*m, n.minimum_value = m->get<double>();
  if (auto m = s.find("maximum"); m != s.end()) n.maximum = &*m, n.maximum_value = m->get<double>();
  if (auto r = s.find("required"); r != s.end())
    for (const auto& k : *r) n.required.push_back(k.get<std::string>());
  if (auto p = s.find("properties"); p != s.end()) {
    n.has_properties = true;
    for (const auto& [k, sub] : p->items()) n.properties[k] = compile(sub);
  }
  if (auto x = s.find("additionalProperties"); x != s.end()) {
    n.additional_false = x->is_boolean() && !x->get<bool>();
    n.additional = compile(*x);
  }
  if (auto m = s.find("minItems"); m != s.end()) n.min_items = &*m, n.min_items_value = m->get<size_t>();
  if (auto m = s.find("maxItems"); m != s.end()) n.max_items = &*m, n.max_items_value = m->get<size_t>();
  if (auto it = s.find("items"); it != s.end()) n.items = compile(*it);
  if (auto a = s.find("oneOf"); a != s.end()) {
    n.has_one_of = true;
    for (const auto& alt : *a) n.one_of.push_back(compile(alt));
  }
  if (auto a = s.find("anyOf"); a != s.end()) {
    n.has_any_of = true;
    for (const auto& alt : *a) n.any_of.push_back(compile(alt));
  }
  return &n;
}

void SchemaValidator::check_keywords(const json& s, const std::string& where) const {
  static const std::set<std::string> known = {
      "$schema", "$id", "title", "description", "$defs", "$ref", "type", "required",
      "properties", "additionalProperties", "items", "minItems", "maxItems", "enum", "const",
      "minimum", "maximum", "oneOf", "anyOf"};
  if (s.is_boolean()) return;
  if (!s.is_object()) fail("schema ", where, ": a schema must be an object or a boolean");
  for (const auto& [k, v] : s.items()) {
    if (!known.count(k)) fail("schema ", where, ": keyword '", k, "' is not supported by this validator");
    check_keyword_value(k, v, where);
    if (k == "$defs" || k == "properties")
      for (const auto& [name, sub] : v.items()) check_keywords(sub, where + "/" + k + "/" + name);
    if (k == "items" || k == "additionalProperties") check_keywords(v, where + "/" + k);
    if (k == "oneOf" || k == "anyOf")
      for (size_t i = 0; i < v.size(); ++i) check_keywords(v[i], where + "/" + k + "/" + std::to_string(i));
    if (k == "$ref") resolve(v.get<std::string>());
  }
}

// The value types the validator relies on when it reads a keyword.
void SchemaValidator::check_keyword_value(const std::string& k, const json& v, const std::string& where) {
  const auto bad = [&](const char* expected) { fail("schema ", where, ": '", k, "' must be ", expected); };
  const auto all_strings = [](const json& a) {
    for (const auto& x : a)
      if (!x.is_string()) return false;
    return true;
  };
  if ((k == "$defs" || k == "properties") && !v.is_object()) bad("an object");
  if ((k == "oneOf" || k == "anyOf" || k == "enum") && !v.is_array()) bad("an array");
  if (k == "required" && (!v.is_array() || !all_strings(v))) bad("an array of strings");
  if (k == "type" && !v.is_string() && (!v.is_array() || !all_strings(v))) bad("a string or an array of strings");
  if (k == "$ref" && !v.is_string()) bad("a string");
  if ((k == "minimum" || k == "maximum") && !v.is_number()) bad("a number");
  if ((k == "minItems" || k == "maxItems") && !v.is_number_unsigned()) bad("a non-negative integer");
}

const json& SchemaValidator::resolve(const std::string& ref) const {
  const std::string prefix = "#/$defs/";
  if (ref.rfind(prefix, 0) != 0) fail("schema: $ref '", ref, "' is not of the form #/$defs/NAME");
  const std::string name = ref.substr(prefix.size());
  auto defs = root_.find("$defs");
  if (defs == root_.end() || !defs->contains(name)) fail("schema: $ref '", ref, "' has no definition");
  return (*defs)[name];
}

std::vector<std::string> SchemaValidator::validate(const json& doc, size_t max_errors,
                                                   const CancelFlag* cancel) const {
  std::vector<std::string> errs;
  check(*root_node_, doc, nullptr, errs, max_errors, 0, cancel);
  return errs;
}

void SchemaValidator::check(const Node& s, const json& v, const Path* at, std::vector<std::string>& errs,
                            size_t max_errors, size_t depth, const CancelFlag* cancel) const {
  if (errs.size() >= max_errors) return;
  // Documents are depth-bounded when parsed; this bounds "$ref" chains (a cycle in a schema).
  if (depth > kMaxSchemaDepth) fail("schema: more than ", kMaxSchemaDepth, " nested checks (a $ref cycle?)");
  const auto err = [&](const std::string& what) {
    if (errs.size() < max_errors) errs.push_back((at ? at->str() : std::string("/")) + ": " + what);
  };
  if (s.boolean) {
    if (!s.allows) err("no value is allowed here");
    return;
  }
  if (s.ref) check(*s.ref, v, at, errs, max_errors, depth + 1, cancel);

  if (s.has_type) {
    bool ok = false;
    for (Kind t : s.types) ok = ok || has_type(v, t);
    if (!ok) {
      err("expected " + s.type_names + ", got " + type_of(v));
      return;  // the other keywords would only repeat the same problem
    }
  }
  if (s.constant && v != *s.constant) err("expected " + short_dump(*s.constant) + ", got " + short_dump(v));
  if (s.enumeration) {
    bool ok = false;
    for (const auto& x : *s.enumeration) ok = ok || v == x;
    if (!ok) err(short_dump(v) + " is not one of " + short_dump(*s.enumeration));
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.minimum && x < s.minimum_value) err(short_dump(v) + " is below the minimum " + short_dump(*s.minimum));
    if (s.maximum && x > s.maximum_value) err(short_dump(v) + " is above the maximum " + short_dump(*s.maximum));
  }
  if (v.is_object()) {
    for (const std::string& k : s.required)
      if (!v.contains(k)) err("missing required field '" + k + "'");
    if (s.has_properties || s.additional)
      for (const auto& [k, x] : v.items()) {
        const Path here{at, &k, 0};
        if (auto p = s.properties.find(k); p != s.properties.end()) {
          check(*p->second, x, &here, errs, max_errors, depth + 1, cancel);
        } else if (s.additional) {
          if (s.additional_false) err("unexpected field '" + k + "'");
          else check(*s.additional, x, &here, errs, max_errors, depth + 1, cancel);
        }
      }
  }
  if (v.is_array()) {
    if (s.min_items && v.size() < s.min_items_value)
      err("has " + std::to_string(v.size()) + " items, at least " + short_dump(*s.min_items) + " expected");
    if (s.max_items && v.size() > s.max_items_value)
      err("has " + std::to_string(v.size()) + " items, at most " + short_dump(*s.max_items) + " expected");
    if (s.items)
      for (size_t i = 0; i < v.size() && errs.size() < max_errors; ++i) {
        stop_if_cancelled(cancel);  // arrays hold the bulk of a trace (steps, nodes, values)
        const Path here{at, nullptr, i};
        check(*s.items, v[i], &here, errs, max_errors, depth + 1, cancel);
      }
  }
  for (const bool one : {true, false}) {
    if (!(one ? s.has_one_of : s.has_any_of)) continue;
    const std::vector<const Node*>& alts = one ? s.one_of : s.any_of;
    const char* kw = one ? "oneOf" : "anyOf";
    size_t matched = 0, best = 0, best_n = SIZE_MAX;
    std::vector<std::vector<std::string>> branch_errs(alts.size());
    for (size_t i = 0; i < alts.size(); ++i) {
      check(*alts[i], v, at, branch_errs[i], 4, depth + 1, cancel);
      if (branch_errs[i].empty()) ++matched;
      if (branch_errs[i].size() < best_n) best_n = branch_errs[i].size(), best = i;
    }
    if (matched == 0)
      err("matches none of the " + std::string(kw) + " alternatives; the closest (#" + std::to_string(best) +
          ") fails with: " + branch_errs[best].front());
    else if (one && matched > 1)
      err("matches " + std::to_string(matched) + " of the oneOf alternatives, exactly one expected");
  }
}

}  // namespace minfer::trace
