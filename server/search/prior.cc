#include "server/search/prior.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tuned::embedded {
extern const char kShippedPrior[];
}  // namespace tuned::embedded

namespace tuned::search {

std::string_view PriorMatchName(PriorMatch m) {
  switch (m) {
    case PriorMatch::kSameGpu: return "same GPU";
    case PriorMatch::kSameArchitecture: return "same architecture, another model";
    case PriorMatch::kNone: break;
  }
  return "another architecture: not used";
}

namespace {
constexpr int kFormatVersion = 1;

bool ParseShape(absl::string_view text, Shape* shape) {
  shape->clear();
  for (absl::string_view d : absl::StrSplit(text, 'x')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(d, &v) || v <= 0) return false;
    shape->push_back(v);
  }
  return !shape->empty();
}
}  // namespace

absl::StatusOr<Prior> Prior::Parse(std::string_view text, std::string origin) {
  Prior prior;
  prior.origin_ = std::move(origin);
  int line_no = 0;
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("prior ", prior.origin_, ", line ", line_no, ": ", std::string(why)));
  };
  // The current `params` line's family and names, and `shape` line's block.
  const Family* family = nullptr;
  std::vector<std::string> names;
  std::vector<Record>* rows = nullptr;
  Shape shape;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    if (line_no == 1 || prior.version_ == 0) {
      if (f.size() != 2 || f[0] != "tuned-prior") return bad("not a prior (it starts 'tuned-prior<TAB>1')");
      if (!absl::SimpleAtoi(f[1], &prior.version_) || prior.version_ != kFormatVersion) {
        return bad(absl::StrCat("format version ", std::string(f[1]), "; this daemon reads ",
                                kFormatVersion));
      }
      continue;
    }
    if (f[0] == "device") {
      int32_t sms = 0, driver = 0;
      std::vector<absl::string_view> cc = absl::StrSplit(f.size() > 2 ? f[2] : "", '.');
      int32_t major = 0, minor = 0;
      if (f.size() != 6 || cc.size() != 2 || !absl::SimpleAtoi(cc[0], &major) ||
          !absl::SimpleAtoi(cc[1], &minor) || !absl::SimpleAtoi(f[3], &sms) ||
          !absl::SimpleAtoi(f[4], &driver)) {
        return bad("device: name, compute capability (9.0), SM count, driver, NVRTC");
      }
      prior.device_.set_name(std::string(f[1]));
      prior.device_.set_cc_major(major);
      prior.device_.set_cc_minor(minor);
      prior.device_.set_sm_count(sms);
      prior.device_.set_driver_version(driver);
      prior.device_.set_nvrtc_version(std::string(f[5]));
    } else if (f[0] == "source") {
      prior.source_ = f.size() > 1 ? std::string(f[1]) : "";
    } else if (f[0] == "params") {
      if (f.size() < 3) return bad("params: a family and its parameter names");
      family = FindFamily(std::string(f[1]));
      if (family == nullptr) return bad(absl::StrCat("unknown family '", std::string(f[1]), "'"));
      names.clear();
      for (size_t i = 2; i < f.size(); ++i) names.emplace_back(f[i]);
      rows = nullptr;
    } else if (f[0] == "shape") {
      v1::DType dtype;
      v1::Math math;
      if (f.size() != 5 || family == nullptr || std::string(f[1]) != family->name()) {
        return bad("shape: family (of the params line before), dtype, math mode, MxNxK");
      }
      if (!v1::DType_Parse(absl::StrCat("DTYPE_", absl::AsciiStrToUpper(f[2])), &dtype)) {
        return bad(absl::StrCat("unknown dtype '", std::string(f[2]), "'"));
      }
      if (!v1::Math_Parse(absl::StrCat("MATH_", absl::AsciiStrToUpper(f[3])), &math)) {
        return bad(absl::StrCat("unknown math mode '", std::string(f[3]), "'"));
      }
      if (!ParseShape(f[4], &shape) || shape.size() != family->dims().size()) {
        return bad(absl::StrCat("bad shape '", std::string(f[4]), "'"));
      }
      rows = &prior.problems_[{std::string(family->name()), dtype, math}].by_shape[shape];
    } else {
      if (rows == nullptr) return bad("a measurement before its params and shape lines");
      if (f.size() != names.size() + 1) {
        return bad(absl::StrCat("a measurement has ", f.size(), " fields; its params line names ",
                                names.size(), " parameters and the time"));
      }
      Record r;
      r.shape = shape;
      if (!absl::SimpleAtod(f[0], &r.ms) || !(r.ms > 0)) return bad("bad time (ms)");
      for (size_t i = 0; i < names.size(); ++i) {
        if (f[i + 1] == "-") continue;
        int64_t v = 0;
        if (!absl::SimpleAtoi(f[i + 1], &v)) return bad(absl::StrCat("bad value of ", names[i]));
        r.config[names[i]] = v;
      }
      if (!family->CheckParams(r.config).ok()) {  // of an older space: of no use, no harm
        ++prior.skipped_;
        continue;
      }
      rows->push_back(std::move(r));
    }
  }
  if (prior.version_ == 0) return bad("empty");
  if (prior.device_.name().empty()) return bad("no device line");
  for (auto& [key, p] : prior.problems_) {
    for (auto& [s, rs] : p.by_shape) {
      std::stable_sort(rs.begin(), rs.end(), [](const Record& a, const Record& b) { return a.ms < b.ms; });
    }
  }
  return prior;
}

absl::StatusOr<Prior> Prior::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the prior ", path));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<Prior> Prior::Shipped() {
  auto p = Parse(embedded::kShippedPrior, "shipped (prior/h100.tsv)");
  if (!p.ok()) return absl::InternalError(p.status().message());
  return p;
}

PriorMatch Prior::Match(const v1::Device& device) const {
  if (device.cc_major() != device_.cc_major() || device.cc_minor() != device_.cc_minor()) {
    return PriorMatch::kNone;
  }
  return device.name() == device_.name() ? PriorMatch::kSameGpu : PriorMatch::kSameArchitecture;
}

std::vector<Record> Prior::Records(std::string_view family, v1::DType dtype, v1::Math math,
                                   const Shape& except, const std::set<Shape>* skip,
                                   size_t fastest) const {
  std::vector<Record> out;
  auto it = problems_.find({std::string(family), dtype, math});
  if (it == problems_.end()) return out;
  for (const auto& [shape, rows] : it->second.by_shape) {
    if (shape == except || (skip != nullptr && skip->count(shape) != 0)) continue;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (fastest == 0 || i < fastest || (i - fastest) % kThinEvery == 0) out.push_back(rows[i]);
    }
  }
  return out;
}

std::vector<Config> Prior::Ranked(std::string_view family, v1::Math math) const {
  struct Rank {
    size_t best = SIZE_MAX;
    int shapes = 0;  // shapes where it has its best rank
  };
  std::map<Config, Rank> ranks;
  for (const auto& [key, p] : problems_) {
    if (std::get<0>(key) != family || std::get<2>(key) != math) continue;
    for (const auto& [shape, rows] : p.by_shape) {
      for (size_t i = 0; i < rows.size(); ++i) {
        Rank& r = ranks[rows[i].config];
        if (i < r.best) {
          r.best = i;
          r.shapes = 1;
        } else if (i == r.best) {
          ++r.shapes;
        }
      }
    }
  }
  std::vector<std::pair<Config, Rank>> order(ranks.begin(), ranks.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second.best != b.second.best ? a.second.best < b.second.best
                                          : a.second.shapes > b.second.shapes;
  });
  std::vector<Config> out;
  for (auto& [c, r] : order) out.push_back(c);
  return out;
}

std::map<std::string, size_t> AheadPlaces(const Prior& prior,
                                          const std::vector<const Family*>& families,
                                          size_t neighbours_of) {
  std::map<std::string, size_t> place;
  auto put = [&](const std::string& name, size_t p) {  // the earliest place a config earns
    auto [it, fresh] = place.emplace(name, p);
    if (!fresh) it->second = std::min(it->second, p);
  };
  size_t offset = 0;  // each mode after the ones before it
  for (v1::Math math : {v1::MATH_IEEE_FP32, v1::MATH_FP32_ACCURATE, v1::MATH_TF32}) {
    size_t last = offset;
    for (const Family* family : families) {
      const std::vector<Config> ranked = prior.Ranked(family->name(), math);
      const size_t tail = offset + ranked.size();  // the neighbours' tier
      for (size_t i = 0; i < ranked.size(); ++i) {
        put(family->ConfigName(ranked[i]), offset + i);
        if (i >= neighbours_of) continue;
        for (const Config& n : family->Neighbours(ranked[i])) {
          if (!family->Admits(n, math)) continue;
          put(family->ConfigName(n), tail + i);
          last = std::max(last, tail + i);
        }
      }
      last = std::max(last, tail);
    }
    offset = last + 1;
  }
  return place;
}

}  // namespace tuned::search
