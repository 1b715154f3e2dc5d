#include "tools/bench/targets.h"

#include "absl/strings/str_cat.h"

namespace codecvisor::bench {

void WriteTargets(cli::JsonWriter& w, const std::vector<TargetCheck>& checks) {
  bool all = true;
  w.Key("targets").BeginArray();
  for (const TargetCheck& c : checks) {
    w.BeginObject().Key("figure").String(c.figure).Key("target").String(c.target).Key("met").Bool(c.met).EndObject();
    all = all && c.met;
  }
  w.EndArray();
  w.Key("targets_met").Bool(all);
}

std::string TargetNote(const std::vector<TargetCheck>& checks, const std::string& figure) {
  for (const TargetCheck& c : checks) {
    if (c.figure == figure) return absl::StrCat("(target ", c.target, ": ", c.met ? "met" : "NOT MET", ")");
  }
  return "";
}

}  // namespace codecvisor::bench
