#include "cli/format.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>

namespace artel::cli {

using Json = nlohmann::json;

std::string HumanAge(int64_t s) {
  if (s < 0) return "-";
  auto n = [](int64_t v) { return std::to_string(v); };
  if (s < 120) return n(s) + "s";
  int64_t minutes = s / 60;
  if (minutes < 10) return s % 60 == 0 ? n(minutes) + "m" : n(minutes) + "m" + n(s % 60) + "s";
  if (minutes < 180) return n(minutes) + "m";
  int64_t hours = s / 3600;
  if (hours < 8) return minutes % 60 == 0 ? n(hours) + "h" : n(hours) + "h" + n(minutes % 60) + "m";
  if (hours < 48) return n(hours) + "h";
  int64_t days = hours / 24;
  if (hours < 24 * 8) return hours % 24 == 0 ? n(days) + "d" : n(days) + "d" + n(hours % 24) + "h";
  if (days < 365 * 2) return n(days) + "d";
  int64_t years = days / 365;
  if (years < 8) return days % 365 == 0 ? n(years) + "y" : n(years) + "y" + n(days % 365) + "d";
  return n(years) + "y";
}

std::string Rfc3339(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void TimesToRfc3339(Json* j) {
  static const char* kTimeFields[] = {"creationTimestamp", "admittedAt", "startedAt", "finishedAt", "time"};
  if (j->is_array()) {
    for (auto& e : *j) TimesToRfc3339(&e);
    return;
  }
  if (!j->is_object()) return;
  for (auto it = j->begin(); it != j->end(); ++it) {
    bool is_time = std::any_of(std::begin(kTimeFields), std::end(kTimeFields),
                               [&](const char* f) { return it.key() == f; });
    if (is_time && it->is_number_integer()) {
      int64_t ms = it->get<int64_t>();
      *it = ms > 0 ? Json(Rfc3339(ms)) : Json(nullptr);
    } else {
      TimesToRfc3339(&*it);
    }
  }
}

// ---- JSONPath ---------------------------------------------------------------

namespace {

struct Step {
  enum class Kind { kField, kIndex, kAll } kind;
  std::string field;
  int64_t index = 0;
};

bool ParsePath(const std::string& in, std::vector<Step>* steps, std::string* err) {
  std::string p = in;
  while (!p.empty() && std::isspace(static_cast<unsigned char>(p.back()))) p.pop_back();
  size_t i = 0;
  while (i < p.size() && std::isspace(static_cast<unsigned char>(p[i]))) ++i;
  if (i < p.size() && (p[i] == '$' || p[i] == '@')) ++i;
  auto fail = [&](const std::string& what) {
    *err = "jsonpath \"" + in + "\" at character " + std::to_string(i + 1) + ": " + what +
           " (supported: .field, ['field'], [n], [*], {range ...}{end}, quoted text)";
    return false;
  };
  if (i == p.size()) return true;
  while (i < p.size()) {
    char c = p[i];
    if (c == '.') {
      if (i + 1 < p.size() && p[i + 1] == '.') return fail("recursive descent (..) is not supported");
      ++i;
      size_t start = i;
      while (i < p.size() && p[i] != '.' && p[i] != '[') {
        if (std::isspace(static_cast<unsigned char>(p[i])) || p[i] == '(' || p[i] == '?' || p[i] == '}')
          return fail(std::string("unexpected '") + p[i] + "'");
        ++i;
      }
      std::string name = p.substr(start, i - start);
      if (name == "*") {
        steps->push_back({Step::Kind::kAll, "", 0});
      } else if (!name.empty()) {
        steps->push_back({Step::Kind::kField, name, 0});
      } else if (i < p.size() && p[i] != '[') {
        return fail("empty field name");
      }
    } else if (c == '[') {
      size_t close = p.find(']', i);
      if (close == std::string::npos) return fail("unclosed [");
      std::string inner = p.substr(i + 1, close - i - 1);
      if (inner == "*") {
        steps->push_back({Step::Kind::kAll, "", 0});
      } else if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') &&
                 inner.back() == inner.front()) {
        steps->push_back({Step::Kind::kField, inner.substr(1, inner.size() - 2), 0});
      } else if (!inner.empty() && inner[0] == '?') {
        return fail("filters [?(...)] are not supported");
      } else if (inner.find(':') != std::string::npos) {
        return fail("slices [a:b] are not supported");
      } else if (inner.find(',') != std::string::npos) {
        return fail("unions [a,b] are not supported");
      } else {
        size_t k = inner[0] == '-' ? 1 : 0;
        if (k >= inner.size() || inner.size() > 12 ||
            !std::all_of(inner.begin() + static_cast<long>(k), inner.end(),
                         [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
          return fail("[" + inner + "] is not an index, [*] or ['field']");
        }
        steps->push_back({Step::Kind::kIndex, "", std::stoll(inner)});
      }
      i = close + 1;
    } else {
      return fail(std::string("unexpected '") + c + "'");
    }
  }
  return true;
}

std::vector<Json> Eval(const std::vector<Step>& steps, const Json& root) {
  std::vector<Json> cur = {root};
  for (const Step& s : steps) {
    std::vector<Json> next;
    for (const Json& v : cur) {
      switch (s.kind) {
        case Step::Kind::kField:
          if (v.is_object() && v.contains(s.field)) next.push_back(v[s.field]);
          break;
        case Step::Kind::kIndex:
          if (v.is_array()) {
            int64_t n = static_cast<int64_t>(v.size());
            int64_t k = s.index < 0 ? n + s.index : s.index;
            if (k >= 0 && k < n) next.push_back(v[static_cast<size_t>(k)]);
          }
          break;
        case Step::Kind::kAll:
          if (v.is_array() || v.is_object()) {
            for (const auto& e : v) next.push_back(e);
          }
          break;
      }
    }
    cur = std::move(next);
  }
  return cur;
}

std::string Text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char n = s[++i];
      out += n == 'n' ? '\n' : n == 't' ? '\t' : n == 'r' ? '\r' : n;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A parsed template: literal text, expressions and ranges.
struct Node {
  enum class Kind { kText, kExpr, kRange } kind;
  std::string text;         // kText
  std::vector<Step> steps;  // kExpr, kRange
  std::vector<Node> body;   // kRange
};

bool ParseTemplate(const std::string& t, size_t* pos, std::vector<Node>* out, bool in_range,
                   std::string* err) {
  std::string lit;
  auto flush = [&] {
    if (!lit.empty()) out->push_back({Node::Kind::kText, lit, {}, {}});
    lit.clear();
  };
  while (*pos < t.size()) {
    char c = t[*pos];
    if (c != '{') {
      if (c == '\\' && *pos + 1 < t.size()) {
        lit += Unescape(t.substr(*pos, 2));
        *pos += 2;
        continue;
      }
      lit += c;
      ++*pos;
      continue;
    }
    // Find the matching '}' outside quotes.
    size_t i = *pos + 1;
    char quote = 0;
    for (; i < t.size(); ++i) {
      if (quote) {
        if (t[i] == '\\') {
          ++i;
        } else if (t[i] == quote) {
          quote = 0;
        }
      } else if (t[i] == '\'' || t[i] == '"') {
        quote = t[i];
      } else if (t[i] == '}') {
        break;
      }
    }
    if (i >= t.size()) {
      *err = "jsonpath \"" + t + "\": unclosed { at character " + std::to_string(*pos + 1);
      return false;
    }
    std::string expr = t.substr(*pos + 1, i - *pos - 1);
    *pos = i + 1;
    size_t b = expr.find_first_not_of(" \t");
    size_t e = expr.find_last_not_of(" \t");
    expr = b == std::string::npos ? "" : expr.substr(b, e - b + 1);
    flush();
    if (expr == "end") {
      if (!in_range) {
        *err = "jsonpath \"" + t + "\": {end} without {range}";
        return false;
      }
      return true;
    }
    if (expr.size() >= 2 && (expr.front() == '"' || expr.front() == '\'') && expr.back() == expr.front()) {
      out->push_back({Node::Kind::kText, Unescape(expr.substr(1, expr.size() - 2)), {}, {}});
      continue;
    }
    if (expr.rfind("range ", 0) == 0) {
      Node n{Node::Kind::kRange, "", {}, {}};
      if (!ParsePath(expr.substr(6), &n.steps, err)) return false;
      if (!ParseTemplate(t, pos, &n.body, true, err)) return false;
      out->push_back(std::move(n));
      continue;
    }
    Node n{Node::Kind::kExpr, "", {}, {}};
    if (!ParsePath(expr, &n.steps, err)) return false;
    out->push_back(std::move(n));
  }
  flush();
  if (in_range) {
    *err = "jsonpath \"" + t + "\": {range} without {end}";
    return false;
  }
  return true;
}

void Render(const std::vector<Node>& nodes, const Json& cur, std::string* out) {
  for (const Node& n : nodes) {
    if (n.kind == Node::Kind::kText) {
      *out += n.text;
    } else if (n.kind == Node::Kind::kExpr) {
      auto vals = Eval(n.steps, cur);
      for (size_t i = 0; i < vals.size(); ++i) *out += (i ? " " : "") + Text(vals[i]);
    } else {
      for (const Json& v : Eval(n.steps, cur)) {
        // A range over one array iterates its elements.
        if (v.is_array() && n.steps.empty()) {
          for (const auto& e : v) Render(n.body, e, out);
        } else {
          Render(n.body, v, out);
        }
      }
    }
  }
}

}  // namespace

std::optional<std::string> JsonPath(const std::string& tmpl, const Json& root, std::string* err) {
  std::string t = tmpl;
  // kubectl accepts a bare path (".metadata.name") as one expression.
  if (t.find('{') == std::string::npos && !t.empty() && (t[0] == '.' || t[0] == '$')) t = "{" + t + "}";
  std::vector<Node> nodes;
  size_t pos = 0;
  if (!ParseTemplate(t, &pos, &nodes, false, err)) return std::nullopt;
  std::string out;
  Render(nodes, root, &out);
  return out;
}

std::optional<std::vector<Json>> JsonPathValues(const std::string& expr, const Json& root, std::string* err) {
  std::string e = expr;
  if (e.size() >= 2 && e.front() == '{' && e.back() == '}') e = e.substr(1, e.size() - 2);
  std::vector<Step> steps;
  if (!ParsePath(e, &steps, err)) return std::nullopt;
  return Eval(steps, root);
}

std::optional<std::vector<Column>> ParseCustomColumns(const std::string& spec, std::string* err) {
  std::vector<Column> cols;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string part = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = part.find(':');
    if (part.empty() || colon == std::string::npos || colon == 0 || colon + 1 == part.size()) {
      *err = "custom-columns: \"" + part + "\" is not HEADER:JSONPATH (e.g. NAME:.metadata.name)";
      return std::nullopt;
    }
    Column c{part.substr(0, colon), part.substr(colon + 1)};
    std::string perr;
    if (!JsonPathValues(c.path, Json::object(), &perr)) {
      *err = "custom-columns: column " + c.header + ": " + perr;
      return std::nullopt;
    }
    cols.push_back(c);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cols;
}

// ---- label selectors -----------------------------------------------------------

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool ValidKey(const std::string& k) {
  if (k.empty() || k.size() > 253 + 63) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '/';
  });
}

bool ValidValue(const std::string& v) {
  if (v.size() > 63) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

}  // namespace

std::optional<std::vector<Requirement>> ParseLabelSelector(const std::string& s, std::string* err) {
  std::vector<Requirement> out;
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) {
    *err = "label selector \"" + s + "\": unbalanced parentheses";
    return std::nullopt;
  }
  parts.push_back(cur);
  if (parts.size() == 1 && Trim(parts[0]).empty()) return out;
  for (const auto& raw : parts) {
    std::string p = Trim(raw);
    auto fail = [&](const std::string& why) {
      *err = "label selector \"" + s + "\": \"" + p + "\": " + why +
             " (want key=value, key!=value, key in (a,b), key notin (a,b), key or !key)";
      return std::nullopt;
    };
    Requirement r;
    if (p.empty()) return fail("empty requirement");
    if (p[0] == '!') {
      r.key = Trim(p.substr(1));
      r.op = Requirement::Op::kNotExists;
    } else if (size_t sp = p.find_first_of(" \t(");
               sp != std::string::npos && p.find_first_of("=!") == std::string::npos) {
      r.key = p.substr(0, sp);
      std::string rest = Trim(p.substr(sp));
      std::string op;
      if (rest.rfind("notin", 0) == 0) {
        op = "notin";
        r.op = Requirement::Op::kNotIn;
      } else if (rest.rfind("in", 0) == 0) {
        op = "in";
        r.op = Requirement::Op::kIn;
      } else {
        return fail("unknown operator");
      }
      rest = Trim(rest.substr(op.size()));
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')')
        return fail("the values of " + op + " go in parentheses");
      std::string list = rest.substr(1, rest.size() - 2);
      size_t start = 0;
      while (true) {
        size_t comma = list.find(',', start);
        std::string v =
            Trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!ValidValue(v)) return fail("bad value \"" + v + "\"");
        r.values.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (size_t ne = p.find("!="); ne != std::string::npos) {
      r.key = Trim(p.substr(0, ne));
      r.op = Requirement::Op::kNotEquals;
      r.values = {Trim(p.substr(ne + 2))};
    } else if (size_t eq = p.find('='); eq != std::string::npos) {
      r.key = Trim(p.substr(0, eq));
      r.op = Requirement::Op::kEquals;
      size_t vstart = eq + 1 < p.size() && p[eq + 1] == '=' ? eq + 2 : eq + 1;
      r.values = {Trim(p.substr(vstart))};
    } else {
      r.key = p;
      r.op = Requirement::Op::kExists;
    }
    if (!ValidKey(r.key)) return fail("bad key \"" + r.key + "\"");
    for (const auto& v : r.values) {
      if (!ValidValue(v)) return fail("bad value \"" + v + "\"");
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool MatchesLabels(const std::vector<Requirement>& sel, const std::map<std::string, std::string>& labels) {
  for (const auto& r : sel) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    auto in = [&] {
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    };
    bool ok = true;
    switch (r.op) {
      case Requirement::Op::kEquals:
      case Requirement::Op::kIn: ok = in(); break;
      case Requirement::Op::kNotEquals:
      case Requirement::Op::kNotIn: ok = !in(); break;
      case Requirement::Op::kExists: ok = has; break;
      case Requirement::Op::kNotExists: ok = !has; break;
    }
    if (!ok) return false;
  }
  return true;
}

// ---- suggestions -----------------------------------------------------------------

size_t EditDistance(const std::string& a, const std::string& b) {
  // Damerau-Levenshtein (optimal string alignment): a swap of two adjacent
  // letters ("namepsace") counts as one edit.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string Suggest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = EditDistance(word, c);
    // A prefix of a longer name (--gpu for --gpus) is a likely typo too.
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0 && word.size() >= 3)
      d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Short words: one edit; longer ones: a third of the word (at least 2).
  size_t limit = word.size() <= 4 ? 1 : std::max<size_t>(2, word.size() / 3);
  return best_d <= limit && best_d > 0 ? best : "";
}

}  // namespace artel::cli
