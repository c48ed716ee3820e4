#include "json_schema.h"

#include <cmath>
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

bool has_type(const json& v, const std::string& t) {
  if (t == "number") return v.is_number();
  if (t == "integer") {
    // An integral float counts only where a double holds integers exactly (|x| <= 2^53):
    // readers convert integers with get<int64_t>(), which 1e300 would overflow.
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double x = v.get<double>();
    return std::isfinite(x) && std::floor(x) == x && std::fabs(x) <= 9007199254740992.0;
  }
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

std::string short_dump(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

SchemaValidator::SchemaValidator(json schema) : root_(std::move(schema)) {
  if (!root_.is_object()) fail("schema: the root is not an object");
  check_keywords(root_, "");
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
  check(root_, doc, nullptr, errs, max_errors, 0, cancel);
  return errs;
}

void SchemaValidator::check(const json& s, const json& v, const Path* at, std::vector<std::string>& errs,
                            size_t max_errors, size_t depth, const CancelFlag* cancel) const {
  if (errs.size() >= max_errors) return;
  // Documents are depth-bounded when parsed; this bounds "$ref" chains (a cycle in a schema).
  if (depth > kMaxSchemaDepth) fail("schema: more than ", kMaxSchemaDepth, " nested checks (a $ref cycle?)");
  const auto err = [&](const std::string& what) {
    if (errs.size() < max_errors) errs.push_back((at ? at->str() : std::string("/")) + ": " + what);
  };
  if (s.is_boolean()) {
    if (!s.get<bool>()) err("no value is allowed here");
    return;
  }
  if (auto r = s.find("$ref"); r != s.end()) check(resolve(r->get<std::string>()), v, at, errs, max_errors, depth + 1, cancel);

  if (auto t = s.find("type"); t != s.end()) {
    bool ok = false;
    std::string names;
    for (const auto& one : t->is_array() ? *t : json::array({*t})) {
      ok = ok || has_type(v, one.get<std::string>());
      names += (names.empty() ? "" : " or ") + one.get<std::string>();
    }
    if (!ok) {
      err("expected " + names + ", got " + type_of(v));
      return;  // the other keywords would only repeat the same problem
    }
  }
  if (auto c = s.find("const"); c != s.end() && v != *c)
    err("expected " + short_dump(*c) + ", got " + short_dump(v));
  if (auto e = s.find("enum"); e != s.end()) {
    bool ok = false;
    for (const auto& x : *e) ok = ok || v == x;
    if (!ok) err(short_dump(v) + " is not one of " + short_dump(*e));
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (auto m = s.find("minimum"); m != s.end() && x < m->get<double>())
      err(short_dump(v) + " is below the minimum " + short_dump(*m));
    if (auto m = s.find("maximum"); m != s.end() && x > m->get<double>())
      err(short_dump(v) + " is above the maximum " + short_dump(*m));
  }
  if (v.is_object()) {
    if (auto r = s.find("required"); r != s.end())
      for (const auto& k : *r)
        if (!v.contains(k.get<std::string>())) err("missing required field '" + k.get<std::string>() + "'");
    const auto props = s.find("properties");
    const auto extra = s.find("additionalProperties");
    for (const auto& [k, x] : v.items()) {
      const Path here{at, &k, 0};
      if (props != s.end() && props->contains(k)) check((*props)[k], x, &here, errs, max_errors, depth + 1, cancel);
      else if (extra != s.end()) {
        if (extra->is_boolean() && !extra->get<bool>()) err("unexpected field '" + k + "'");
        else check(*extra, x, &here, errs, max_errors, depth + 1, cancel);
      }
    }
  }
  if (v.is_array()) {
    if (auto m = s.find("minItems"); m != s.end() && v.size() < m->get<size_t>())
      err("has " + std::to_string(v.size()) + " items, at least " + short_dump(*m) + " expected");
    if (auto m = s.find("maxItems"); m != s.end() && v.size() > m->get<size_t>())
      err("has " + std::to_string(v.size()) + " items, at most " + short_dump(*m) + " expected");
    if (auto it = s.find("items"); it != s.end())
      for (size_t i = 0; i < v.size() && errs.size() < max_errors; ++i) {
        stop_if_cancelled(cancel);  // arrays hold the bulk of a trace (steps, nodes, values)
        const Path here{at, nullptr, i};
        check(*it, v[i], &here, errs, max_errors, depth + 1, cancel);
      }
  }
  for (const char* kw : {"oneOf", "anyOf"}) {
    auto alts = s.find(kw);
    if (alts == s.end()) continue;
    size_t matched = 0, best = 0, best_n = SIZE_MAX;
    std::vector<std::vector<std::string>> branch_errs(alts->size());
    for (size_t i = 0; i < alts->size(); ++i) {
      check((*alts)[i], v, at, branch_errs[i], 4, depth + 1, cancel);
      if (branch_errs[i].empty()) ++matched;
      if (branch_errs[i].size() < best_n) best_n = branch_errs[i].size(), best = i;
    }
    const bool one = std::string(kw) == "oneOf";
    if (matched == 0)
      err("matches none of the " + std::string(kw) + " alternatives; the closest (#" + std::to_string(best) +
          ") fails with: " + branch_errs[best].front());
    else if (one && matched > 1)
      err("matches " + std::to_string(matched) + " of the oneOf alternatives, exactly one expected");
  }
}

}  // namespace minfer::trace
