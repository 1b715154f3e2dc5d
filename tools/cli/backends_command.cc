// `codecvisor backends`: every registered backend and its state.

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "api/absl_interop.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/backend_history.h"
#include "core/backend_output.h"
#include "tools/cli/commands.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/json.h"

namespace codecvisor::cli {

namespace {

// What earlier processes saw of each backend (core/backend_history.h).
struct History {
  std::string path;
  BackendHistory records;
  std::string problem;  // why it could not be read, if it could not

  // The record of backend `name` loaded from `manifest`: one that another
  // manifest of the same name left (another version, another vendor's
  // plugin) is not this backend's past.
  const BackendRecord* Find(const std::string& name, const std::string& manifest) const {
    auto it = records.find(name);
    if (it == records.end() || !SameManifest(it->second, manifest)) return nullptr;
    return &it->second;
  }
};

History LoadHistory() {
  History h;
  h.path = DefaultBackendHistoryPath();
  if (h.path.empty()) return h;
  absl::StatusOr<BackendHistory> records = ReadBackendHistory(h.path);
  if (records.ok()) {
    h.records = *std::move(records);
  } else {
    h.problem = std::string(records.status().message());
  }
  return h;
}

void PrintText(const Host& host, const std::vector<BackendInfo>& backends, const History& history) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "DEVICES", "STATE", "PID", "RESTARTS", "MANIFEST"}};
  for (const BackendInfo& b : backends) {
    // What a backend or a manifest says is escaped: it may hold control
    // characters meant for the terminal.
    rows.push_back({EscapeForTerminal(b.name), b.devices.empty() ? "-" : EscapeForTerminal(absl::StrJoin(b.devices, ",")),
                    b.warm_spare ? b.state + "+spare" : b.state, b.pid > 0 ? absl::StrCat(b.pid) : "-",
                    absl::StrCat(b.restarts), EscapeForTerminal(b.manifest_path)});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c + 1 < rows[r].size(); ++c) absl::StrAppendFormat(&out, "%-*s  ", widths[c], rows[r][c]);
    absl::StrAppend(&out, rows[r].back(), "\n");
    if (r == 0) continue;
    const BackendInfo& b = backends[r - 1];
    if (!b.last_exit.empty()) {
      absl::StrAppend(&out, "  last exit: ", EscapeForTerminal(b.last_exit), b.last_exit_time.empty() ? "" : " at ",
                      b.last_exit_time, "\n");
    }
    if (!b.spare_stopped.empty()) absl::StrAppend(&out, "  spare: ", b.spare_stopped, "\n");
    if (!b.sandbox.empty()) absl::StrAppend(&out, "  sandbox: ", b.sandbox, "\n");
    if (!b.diagnostic.empty()) absl::StrAppend(&out, "  diagnostic: ", EscapeForTerminal(b.diagnostic), "\n");
    if (const BackendRecord* r = history.Find(b.name, b.manifest_path); r != nullptr) {
      absl::StrAppend(&out, "  earlier runs: ", r->restarts, " restart", r->restarts == 1 ? "" : "s");
      if (!r->last_exit.empty()) {
        absl::StrAppend(&out, ", last exit: ", EscapeForTerminal(r->last_exit),
                        r->last_exit_time.empty() ? "" : " at ", EscapeForTerminal(r->last_exit_time));
      }
      absl::StrAppend(&out, "\n");
      if (!r->quarantine.empty()) {
        absl::StrAppend(&out, "  quarantined in an earlier run: ", EscapeForTerminal(r->quarantine), "\n");
      }
    }
  }
  if (!history.problem.empty()) absl::StrAppend(&out, "warning: ", EscapeForTerminal(history.problem), "\n");
  absl::StrAppend(&out, "default device: ", host.default_device(), "\n");
  for (const std::string& warning : host.warnings()) absl::StrAppend(&out, "warning: ", EscapeForTerminal(warning), "\n");
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void PrintJson(const Host& host, const std::vector<BackendInfo>& backends, const History& history) {
  JsonWriter w;
  auto optional_string = [&](const char* key, const std::string& value) {
    w.Key(key);
    value.empty() ? w.Null() : w.String(value);
  };
  w.BeginObject();
  w.Key("schema_version").Int(kJsonSchemaVersion);
  w.Key("default_device").String(host.default_device());
  w.Key("backends").BeginArray();
  for (const BackendInfo& b : backends) {
    w.BeginObject();
    w.Key("name").String(b.name);
    w.Key("devices").BeginArray();
    for (const std::string& device : b.devices) w.String(device);
    w.EndArray();
    w.Key("state").String(b.state);
    w.Key("pid");
    b.pid > 0 ? w.Int(b.pid) : w.Null();
    w.Key("uptime_seconds").Double(b.uptime_seconds);
    w.Key("sessions").Int(b.sessions);
    w.Key("restarts").Int(static_cast<int64_t>(b.restarts));
    optional_string("last_exit", b.last_exit);
    optional_string("last_exit_time", b.last_exit_time);
    w.Key("warm_spare").Bool(b.warm_spare);
    optional_string("spare_stopped", b.spare_stopped);
    optional_string("sandbox", b.sandbox);
    w.Key("manifest").String(b.manifest_path);
    optional_string("diagnostic", b.diagnostic);
    w.Key("history");
    if (const BackendRecord* r = history.Find(b.name, b.manifest_path); r != nullptr) {
      w.BeginObject();
      w.Key("restarts").Int(static_cast<int64_t>(r->restarts));
      optional_string("last_exit", r->last_exit);
      optional_string("last_exit_time", r->last_exit_time);
      optional_string("quarantine", r->quarantine);
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("warnings").BeginArray();
  for (const std::string& warning : host.warnings()) w.String(warning);
  w.EndArray();
  optional_string("history_file", history.path);
  optional_string("history_problem", history.problem);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace

int RunBackends(const BackendsArgs& args) {
  std::vector<ManifestFailure> failures;
  absl::StatusOr<std::unique_ptr<Host>> host = CreateHost(args.backend_manifests, &failures);
  if (!host.ok()) return ReportFailure("backends", "", host.status());
  if (!args.reset.empty()) {
    const std::string path = DefaultBackendHistoryPath();
    absl::Status reset = ToAbsl((*host)->ResetBackend(args.reset));
    // The record is cleared for a backend reset here, and for one no
    // manifest of that name provides now (removed, or not on this
    // command's path).
    bool had = false;
    absl::Status erased;
    if (!path.empty() && (reset.ok() || absl::IsNotFound(reset))) {
      erased = UpdateBackendHistory(path, [&](BackendHistory* h) { had = h->erase(args.reset) > 0; });
    }
    if (absl::IsNotFound(reset) && erased.ok() && had) {
      std::fprintf(stderr, "codecvisor backends: no backend '%s' is found now; cleared its record in %s\n",
                   EscapeForTerminal(args.reset).c_str(), EscapeForTerminal(path).c_str());
      return 0;
    }
    if (!reset.ok()) return ReportFailure("backends", absl::StrCat("--reset ", args.reset), reset);
    std::string cleared;
    if (!path.empty()) {
      cleared = erased.ok() ? absl::StrCat("cleared its record in ", path, " and ")
                            : absl::StrCat("could not clear its record (", erased.message(), "); ");
    }
    std::fprintf(stderr,
                 "codecvisor backends: reset backend '%s': %sreset it in this command's own host (quarantine is "
                 "kept per host process)\n",
                 args.reset.c_str(), cleared.c_str());
    // The record was what the user asked to clear: not done is a failure.
    if (!path.empty() && !erased.ok()) return 1;
  }
  // Started all at once (each start is a child loading its library and
  // answering the handshake); a failure is listed (state failed, with the
  // diagnostic), and repeated on stderr with --start.
  std::vector<absl::Status> started;
  if (!args.no_check) {
    const std::vector<BackendInfo> listed = (*host)->Backends();
    started.resize(listed.size());
    std::vector<std::thread> starters;
    for (size_t i = 0; i < listed.size(); ++i) {
      starters.emplace_back([&, i] { started[i] = ToAbsl((*host)->StartBackend(listed[i].name, kBackendStartTimeout)); });
    }
    for (std::thread& t : starters) t.join();
  }
  std::vector<BackendInfo> backends = (*host)->Backends();
  for (const ManifestFailure& failure : failures) backends.push_back(FailedManifestStatus(failure));
  const History history = LoadHistory();
  if (args.json) {
    PrintJson(**host, backends, history);
  } else {
    PrintText(**host, backends, history);
  }
  if (!StdoutWritten()) return ReportFailure("backends", "", absl::InternalError("cannot write stdout"));
  if (!args.start) return 0;
  bool failed = false;
  for (const absl::Status& s : started) {
    if (s.ok()) continue;
    ReportFailure("backends", "", s);
    failed = true;
  }
  for (const ManifestFailure& failure : failures) {
    ReportFailure("backends", "", absl::Status(failure.status.code(), absl::StrCat("--backend-manifest ", failure.path,
                                                                                   ": ", failure.status.message())));
    failed = true;
  }
  return failed ? 1 : 0;
}

}  // namespace codecvisor::cli
