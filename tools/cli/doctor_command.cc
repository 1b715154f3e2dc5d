// `codecvisor doctor`: what the kernel offers of the sandbox's mechanisms,
// and what each backend actually gets when it starts here.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/absl_interop.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/backend_output.h"
#include "core/kernel_features.h"
#include "core/manifest.h"
#include "core/user_namespace_ids.h"
#include "tools/cli/commands.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/json.h"

namespace codecvisor::cli {

namespace {

// The parts of a full sandbox, as EngagedSandbox::Describe() names them.
constexpr const char* kSandboxParts[] = {"namespaces", "empty root", "uid nobody", "rlimits", "no_new_privs", "landlock", "seccomp",
                                         "cgroup"};

struct BackendReport {
  BackendInfo status;
  std::optional<bool> allow_degraded;  // unknown when the manifest did not load
  std::vector<std::string> not_engaged;  // parts missing from a running child's sandbox
  std::vector<std::string> notes;
};

struct Report {
  KernelFeatures features;
  std::vector<std::string> missing_always;     // labels
  std::vector<std::string> missing_degradable;  // labels
  std::vector<std::string> missing_where_available;  // labels: backends run without them
  std::string host_error;
  std::vector<BackendReport> backends;
  std::vector<std::string> problems;  // each makes the exit code 1
  std::vector<std::string> warnings;  // discovery's (a device claimed twice): shown, not failed for
  bool ok() const { return problems.empty(); }
  // Some backend runs with less than the whole sandbox this host can give.
  bool degraded() const {
    return !missing_degradable.empty() ||
           std::any_of(backends.begin(), backends.end(), [](const BackendReport& b) { return !b.not_engaged.empty(); });
  }
};

const char* NeedName(FeatureNeed need, bool json) {
  if (need == FeatureNeed::kAlways) return "always";
  if (need == FeatureNeed::kWhereAvailable) return json ? "where_available" : "where available";
  return json ? "unless_allow_degraded" : "unless allow_degraded";
}

// What a backend goes without in the degraded sandbox: the parts missing,
// and, with no user namespace, the namespaces and the root made inside one
// (present as the kernel's features, but never given to a backend without
// it).
std::string DegradedLoss(const std::vector<std::string>& missing) {
  std::string loss = absl::StrJoin(missing, ", ");
  if (std::find(missing.begin(), missing.end(), "user namespace") != missing.end()) {
    absl::StrAppend(&loss, " (and with it the pid, net, ipc and mount namespaces and the empty root made inside one)");
  }
  return loss;
}

BackendReport Examine(const Report& report, BackendInfo status, const std::optional<absl::Status>& start) {
  BackendReport b;
  b.status = std::move(status);
  const BackendInfo& s = b.status;
  if (!s.manifest_path.empty()) {
    absl::StatusOr<BackendManifest> manifest = LoadManifest(s.manifest_path);
    if (manifest.ok()) b.allow_degraded = manifest->sandbox.allow_degraded;
  }
  if (s.state == "ready") {
    // What this host can never give a backend is not a degraded sandbox:
    // a non-root host's backends keep its user outside their namespace (as
    // do a root host's whose own namespace has no nobody to map), and
    // without cgroups (the feature table says why) rlimits bound them.
    std::vector<std::string> unavailable;
    for (const char* part : kSandboxParts) {
      const std::string_view p = part;
      if (p == "seccomp" && absl::StrContains(s.sandbox, "seccomp (log only)")) {
        b.not_engaged.push_back("seccomp (log only: CODECVISOR_SECCOMP=log)");
        continue;
      }
      if (absl::StrContains(s.sandbox, part)) continue;
      if (p == "uid nobody" && geteuid() != 0) {
        unavailable.push_back(absl::StrCat("uid nobody (a host that is not root keeps its own uid, ", geteuid(),
                                           ", for its backends)"));
      } else if (p == "uid nobody" && !(UserNamespaceMapsId("uid_map", 65534) && UserNamespaceMapsId("gid_map", 65534))) {
        unavailable.push_back("uid nobody (the host's user namespace does not map uid and gid 65534)");
      } else if (p == "cgroup" && !report.features.cgroups.present) {
        unavailable.push_back("cgroup (memory and tasks bounded by rlimits)");
      } else {
        b.not_engaged.push_back(part);
      }
    }
    if (!b.not_engaged.empty()) {
      b.notes.push_back(absl::StrCat("running with a DEGRADED sandbox: not engaged: ",
                                     absl::StrJoin(b.not_engaged, ", ")));
    }
    if (!unavailable.empty()) {
      b.notes.push_back(absl::StrCat("not available to this host: ", absl::StrJoin(unavailable, "; ")));
    }
  } else if (s.diagnostic.empty() && start.has_value() && !start->ok()) {
    b.status.diagnostic = std::string(start->message());
  }
  if (!report.missing_always.empty()) {
    b.notes.push_back(absl::StrCat("cannot start on this kernel: ", absl::StrJoin(report.missing_always, ", "),
                                   " is needed even with [sandbox] allow_degraded = true"));
  }
  if (!report.missing_degradable.empty()) {
    const std::string missing = DegradedLoss(report.missing_degradable);
    const char* env = std::getenv(kAllowDegradedEnv);
    if (b.allow_degraded.value_or(false)) {
      b.notes.push_back(absl::StrCat("its manifest sets [sandbox] allow_degraded = true: it runs without ", missing,
                                     ", with a warning"));
    } else if (env != nullptr && std::string(env) == "1") {
      b.notes.push_back(absl::StrCat(kAllowDegradedEnv, "=1: it runs without ", missing, ", with a warning"));
    } else {
      b.notes.push_back(absl::StrCat("will refuse to start (missing: ", missing,
                                     ") unless its manifest sets [sandbox] allow_degraded = true or the environment "
                                     "has ", kAllowDegradedEnv, "=1"));
    }
  }
  return b;
}

Report Diagnose(const DoctorArgs& args) {
  Report r;
  r.features = ProbeKernelFeatures();
  std::vector<std::string> degradable;  // missing, needed unless allow_degraded
  for (const NamedFeature& n : AllFeatures(r.features)) {
    if (n.feature->present) continue;
    if (n.need == FeatureNeed::kWhereAvailable) {
      r.missing_where_available.push_back(n.label);
      r.warnings.push_back(absl::StrCat(n.label, " is not used: ", n.feature->detail,
                                        "; backends start without it, with a weaker limit"));
      continue;
    }
    (n.need == FeatureNeed::kAlways ? r.missing_always : r.missing_degradable).push_back(n.label);
    (n.need == FeatureNeed::kAlways ? r.problems : degradable).push_back(
        absl::StrCat(n.label, " is missing: ", n.feature->detail));
  }
  // A missing part the degraded sandbox does without is a problem while
  // any backend cannot start; where every one started without it (their
  // manifests or CODECVISOR_ALLOW_DEGRADED_SANDBOX=1 allow it), a warning.
  auto judge_degradable = [&r, &degradable](bool every_backend_started) {
    for (std::string& d : degradable) {
      (every_backend_started ? r.warnings : r.problems)
          .push_back(every_backend_started ? absl::StrCat(d, "; every backend started without it, as allowed")
                                           : std::move(d));
    }
  };
  std::vector<ManifestFailure> failures;
  absl::StatusOr<std::unique_ptr<Host>> host = CreateHost(args.backend_manifests, &failures);
  if (!host.ok()) {
    r.host_error = std::string(host.status().message());
    r.problems.push_back(absl::StrCat("cannot create the host: ", r.host_error));
    judge_degradable(false);
    return r;
  }
  bool every_backend_started = true;
  std::map<std::string, absl::Status> started;
  for (const BackendInfo& b : (*host)->Backends()) {
    started.emplace(b.name, ToAbsl((*host)->StartBackend(b.name, kBackendStartTimeout)));
  }
  std::vector<BackendInfo> statuses = (*host)->Backends();
  for (const ManifestFailure& failure : failures) statuses.push_back(FailedManifestStatus(failure));
  for (BackendInfo& s : statuses) {
    auto it = started.find(s.name);
    std::optional<absl::Status> start;
    if (it != started.end()) start = it->second;
    BackendReport b = Examine(r, std::move(s), start);
    if (b.status.state != "ready") {
      every_backend_started = false;
      r.problems.push_back(absl::StrCat("backend '", b.status.name, "' is not ready (", b.status.state, "): ",
                                        b.status.diagnostic.empty() ? "no diagnostic" : b.status.diagnostic));
    }
    r.backends.push_back(std::move(b));
  }
  judge_degradable(every_backend_started);
  for (std::string& warning : (*host)->warnings()) r.warnings.push_back(std::move(warning));
  return r;
}

void PrintText(const Report& r) {
  std::string out = absl::StrCat("kernel: ", r.features.kernel, "\n\n");
  std::vector<std::vector<std::string>> rows = {{"FEATURE", "STATUS", "NEEDED", "DETAIL"}};
  for (const NamedFeature& n : AllFeatures(r.features)) {
    rows.push_back({n.label, n.feature->present ? "present" : "MISSING", NeedName(n.need, false), n.feature->detail});
  }
  auto table = [&out](const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> widths(rows[0].size(), 0);
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    for (const auto& row : rows) {
      for (size_t c = 0; c + 1 < row.size(); ++c) absl::StrAppendFormat(&out, "%-*s  ", widths[c], row[c]);
      absl::StrAppend(&out, row.back(), "\n");
    }
  };
  table(rows);
  absl::StrAppend(&out, "\n");
  if (!r.host_error.empty()) {
    absl::StrAppend(&out, "backends: none examined: cannot create the host: ", EscapeForTerminal(r.host_error), "\n");
  } else {
    for (const BackendReport& b : r.backends) {
      const BackendInfo& s = b.status;
      // What a plugin wrote (its errors, its devices) is escaped: no
      // terminal control, no forged line.
      absl::StrAppend(&out, "backend ", EscapeForTerminal(s.name), " (",
                      s.devices.empty() ? "-" : EscapeForTerminal(absl::StrJoin(s.devices, ",")), "): ",
                      s.state, s.pid > 0 ? absl::StrCat(", pid ", s.pid) : "", "\n");
      if (!s.sandbox.empty()) absl::StrAppend(&out, "  sandbox: ", EscapeForTerminal(s.sandbox), "\n");
      if (!s.diagnostic.empty()) absl::StrAppend(&out, "  diagnostic: ", EscapeForTerminal(s.diagnostic), "\n");
      for (const std::string& note : b.notes) absl::StrAppend(&out, "  note: ", EscapeForTerminal(note), "\n");
      absl::StrAppend(&out, "  manifest: ", EscapeForTerminal(s.manifest_path), "\n");
    }
  }
  absl::StrAppend(&out, "\n");
  for (const std::string& warning : r.warnings) absl::StrAppend(&out, "warning: ", EscapeForTerminal(warning), "\n");
  if (r.ok() && r.degraded()) {
    std::vector<std::string> less;
    if (!r.missing_degradable.empty()) less.push_back(absl::StrCat("without ", absl::StrJoin(r.missing_degradable, ", ")));
    for (const BackendReport& b : r.backends) {
      if (!b.not_engaged.empty()) {
        less.push_back(absl::StrCat(EscapeForTerminal(b.status.name), ": not engaged: ", absl::StrJoin(b.not_engaged, ", ")));
      }
    }
    absl::StrAppend(&out, "ok: every backend started, in a DEGRADED sandbox (", absl::StrJoin(less, "; "), ")\n");
  } else if (r.ok()) {
    absl::StrAppend(&out, "ok: every mechanism the sandbox needs is present",
                    r.missing_where_available.empty()
                        ? std::string()
                        : absl::StrCat(" (not ", absl::StrJoin(r.missing_where_available, ", "),
                                       ", which it uses where available)"),
                    " and every backend started\n");
  } else {
    for (const std::string& p : r.problems) absl::StrAppend(&out, "problem: ", EscapeForTerminal(p), "\n");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void PrintJson(const Report& r) {
  JsonWriter w;
  auto optional_string = [&](const char* key, const std::string& value) {
    w.Key(key);
    value.empty() ? w.Null() : w.String(value);
  };
  auto strings = [&](const char* key, const std::vector<std::string>& values) {
    w.Key(key).BeginArray();
    for (const std::string& v : values) w.String(v);
    w.EndArray();
  };
  w.BeginObject();
  w.Key("schema_version").Int(kJsonSchemaVersion);
  w.Key("ok").Bool(r.ok());
  w.Key("degraded").Bool(r.degraded());
  w.Key("kernel").String(r.features.kernel);
  w.Key("features").BeginObject();
  for (const NamedFeature& n : AllFeatures(r.features)) {
    w.Key(n.key).BeginObject();
    w.Key("present").Bool(n.feature->present);
    w.Key("needed").String(NeedName(n.need, true));
    w.Key("detail").String(n.feature->detail);
    if (n.feature == &r.features.landlock) w.Key("abi").Int(r.features.landlock_abi);
    if (n.feature == &r.features.seccomp) w.Key("mode").Int(r.features.seccomp_mode);
    w.EndObject();
  }
  w.EndObject();
  optional_string("host_error", r.host_error);
  w.Key("backends").BeginArray();
  for (const BackendReport& b : r.backends) {
    const BackendInfo& s = b.status;
    w.BeginObject();
    w.Key("name").String(s.name);
    strings("devices", s.devices);
    w.Key("state").String(s.state);
    w.Key("pid");
    s.pid > 0 ? w.Int(s.pid) : w.Null();
    optional_string("sandbox", s.sandbox);
    strings("not_engaged", b.not_engaged);
    w.Key("allow_degraded");
    b.allow_degraded.has_value() ? w.Bool(*b.allow_degraded) : w.Null();
    w.Key("manifest").String(s.manifest_path);
    optional_string("diagnostic", s.diagnostic);
    strings("notes", b.notes);
    w.EndObject();
  }
  w.EndArray();
  strings("problems", r.problems);
  strings("warnings", r.warnings);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace

int RunDoctor(const DoctorArgs& args) {
  const Report report = Diagnose(args);
  if (args.json) {
    PrintJson(report);
  } else {
    PrintText(report);
  }
  if (!StdoutWritten()) return ReportFailure("doctor", "", absl::InternalError("cannot write stdout"));
  return report.ok() ? 0 : 1;
}

}  // namespace codecvisor::cli
