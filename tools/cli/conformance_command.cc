// `codecvisor conformance`: the conformance suite (tools/conformance) against
// an installed backend, as a readable pass/fail report for its vendor.

#include <cstdio>
#include <iostream>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/backend_output.h"
#include "tools/cli/commands.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/json.h"
#include "tools/conformance/conformance.h"

namespace codecvisor::cli {
namespace {

// The report, or, when the suite could not run (`error` not OK), the
// backend and manifest as asked for, why, and no checks: a script reading
// stdout still gets an answer.
std::string ToJson(const conformance::ConformanceReport& report, const absl::Status& error = absl::OkStatus()) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema_version").Int(kJsonSchemaVersion);
  for (const auto& [key, value] : {std::pair{"backend", &report.backend}, std::pair{"manifest", &report.manifest_path},
                                   std::pair{"version", &report.backend_version}}) {
    w.Key(key);
    error.ok() || !value->empty() ? w.String(*value) : w.Null();
  }
  w.Key("error");
  error.ok() ? w.Null() : w.String(error.message());
  w.Key("warnings").BeginArray();
  for (const std::string& warning : report.warnings) w.String(warning);
  w.EndArray();
  w.Key("passed").Int(report.passed());
  w.Key("failed").Int(report.failed());
  w.Key("skipped").Int(report.skipped());
  w.Key("checks").BeginArray();
  for (const conformance::CheckResult& c : report.checks) {
    w.BeginObject();
    w.Key("name").String(c.name);
    w.Key("passed").Bool(c.passed);
    w.Key("skipped").Bool(c.skipped);
    w.Key("detail").String(c.detail);
    w.Key("seconds").Double(c.seconds);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

}  // namespace

int RunConformance(const ConformanceArgs& args) {
  SetBackendLogLevel(args.log_level);
  conformance::ConformanceTarget target{.backend = args.backend, .manifest_path = args.manifest};
  conformance::ConformanceOptions options;
  options.timeout = args.timeout;
  options.min_psnr_floor_db = args.min_psnr_floor_db;
  for (const std::string& path : args.samples) {
    options.samples.push_back({.path = path, .reference = {args.reference, args.reference_timestamps}});
  }
  // The text report streams as the checks finish; JSON comes at the end.
  if (!args.json) {
    options.on_check = [](const conformance::CheckResult& c) {
      // Details quote the plugin's errors: escaped, so that no terminal
      // control or forged line reaches the report.
      std::printf("%s  %-22s %7.2f s  %s\n",
                  c.passed    ? "PASS"
                  : c.skipped ? "SKIP"
                              : "FAIL",
                  c.name.c_str(), c.seconds, EscapeForTerminal(c.detail).c_str());
      std::fflush(stdout);
    };
  }
  absl::StatusOr<conformance::ConformanceReport> report = conformance::RunConformance(target, options);
  if (!report.ok()) {
    std::cerr << "codecvisor conformance: " << EscapeForTerminal(std::string_view(report.status().message().data(), report.status().message().size())) << "\n";
    if (args.json) {
      std::cout << ToJson({.backend = args.backend, .manifest_path = args.manifest}, report.status()) << "\n";
    }
    return 1;
  }
  if (args.json) {
    std::cout << ToJson(*report) << "\n";
  } else {
    for (const std::string& warning : report->warnings) std::printf("warning: %s\n", EscapeForTerminal(warning).c_str());
    std::printf("backend %s (%s), version '%s': %d passed, %d failed, %d skipped\n",
                EscapeForTerminal(report->backend).c_str(), EscapeForTerminal(report->manifest_path).c_str(),
                EscapeForTerminal(report->backend_version).c_str(), report->passed(), report->failed(),
                report->skipped());
  }
  return report->ok() ? 0 : 1;
}

}  // namespace codecvisor::cli
